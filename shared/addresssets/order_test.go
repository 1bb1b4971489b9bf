package addresssets

import (
	"cmp"
	"math/rand/v2"
	"net/netip"
	"testing"

	"cads/shared/store"
)

// The address order is kept in two places: comparePrefix sorts entries in
// memory (a whole set's representation, a replacement's diff) and the
// store's AddressPosition is the index key that pages the addresses
// collection. A page must come out in the order the set shows, so the two
// must agree on every pair: networks of both families, every length,
// shared leading bytes, the same address at different lengths.
func TestAddressPositionKeepsTheSetsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 16))
	network := func() string {
		var a netip.Addr
		if r.IntN(2) == 0 {
			b := [4]byte{10, byte(r.IntN(3)), byte(r.IntN(256)), byte(r.IntN(256))}
			a = netip.AddrFrom4(b)
		} else {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01
			for i := 2; i < 16; i++ {
				if r.IntN(3) == 0 {
					b[i] = byte(r.IntN(256))
				}
			}
			a = netip.AddrFrom16(b)
		}
		return netip.PrefixFrom(a, r.IntN(a.BitLen()+1)).Masked().String()
	}
	var nets []string
	for range 400 {
		nets = append(nets, network())
	}
	// The edges: the same network at two lengths, the family boundary.
	nets = append(nets, "0.0.0.0/0", "0.0.0.0/32", "255.255.255.255/32", "::/0", "::/128", "10.0.0.0/8", "10.0.0.0/16", "::ffff:0:0/96")
	pos := make(map[string]string, len(nets))
	for _, n := range nets {
		p, err := store.AddressPosition(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		pos[n] = p
	}
	for _, a := range nets {
		for _, b := range nets {
			if got, want := cmp.Compare(pos[a], pos[b]), sign(comparePrefix(a, b)); got != want {
				t.Fatalf("%s vs %s: the index orders them %d (%s, %s), the set %d", a, b, got, pos[a], pos[b], want)
			}
		}
	}
}

func sign(n int) int { return cmp.Compare(n, 0) }
