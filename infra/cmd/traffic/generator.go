package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"cads/shared/metrics"
)

// generator makes the records an edge would send for one application:
// access records (the data plane), CDN records (POPs), page-view reports,
// session samples, and now and then an address the web application
// firewall blocks for two minutes (added to a dynamic address set).
type generator struct {
	app, set string
	rate     float64 // mean access records per second
	rng      *rand.Rand
	seq      int
	sessions []session
	ended    int64
	endedSec float64
	lastSamp time.Time
	lastAddr time.Time
}

type session struct {
	id          string
	first, last time.Time
	ua          userAgent
	country     string
}

type userAgent struct{ full, name, os, device string }

var (
	userAgents = []userAgent{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36", "Chrome", "Windows", "desktop"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15", "Safari", "macOS", "desktop"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox", "Linux", "desktop"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Mobile Safari", "iOS", "mobile"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36", "Chrome Mobile", "Android", "mobile"},
		{"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Mobile Safari", "iOS", "tablet"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot", "other", "bot"},
	}
	uaWeights = []float64{34, 14, 6, 22, 16, 4, 4}
	countries = []string{"US", "NL", "DE", "GB", "FR", "JP", "BR", "IN", "CA", "AU"}
	ctyWeight = []float64{30, 15, 12, 10, 8, 6, 5, 5, 5, 4}
	pops      = []string{"ams", "fra", "lhr", "iad", "sfo", "nrt", "gru", "syd"}
	paths     = []string{"/", "/products", "/products/42", "/products/7", "/cart", "/checkout", "/search", "/api/stock", "/login", "/about"}
	assets    = []string{"/static/app.js", "/static/app.css", "/img/logo.svg", "/img/hero.webp", "/fonts/inter.woff2"}
	threats   = []string{"sqli", "xss", "path_traversal"}
	blocked   = []string{"192.0.2.66", "198.51.100.23", "203.0.113.9", "2001:db8:bad::1", "198.51.100.0/28"}
)

func newGenerator(app, set string, rate float64, seed uint64) *generator {
	return &generator{app: app, set: set, rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *generator) pick(items []string, weights []float64) string {
	var total float64
	for _, w := range weights {
		total += w
	}
	x := g.rng.Float64() * total
	for i, w := range weights {
		if x < w {
			return items[i]
		}
		x -= w
	}
	return items[len(items)-1]
}

// lognormal returns a positive value with the given median and spread.
func (g *generator) lognormal(median, sigma float64) float64 {
	return median * math.Exp(sigma*g.rng.NormFloat64())
}

func (g *generator) poisson(mean float64) int {
	// Knuth's method is fine for the small means used here.
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= g.rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// session returns a live session for a new request: mostly an existing
// one, sometimes a new visitor. Sessions idle for 30 minutes end.
func (g *generator) session(now time.Time) *session {
	live := g.sessions[:0]
	for _, s := range g.sessions {
		if now.Sub(s.last) < 30*time.Minute {
			live = append(live, s)
		} else {
			g.ended++
			g.endedSec += s.last.Sub(s.first).Seconds()
		}
	}
	g.sessions = live
	if len(g.sessions) == 0 || g.rng.Float64() < 0.08 {
		g.seq++
		i := 0
		for j, w := 0, g.rng.Float64()*100; j < len(uaWeights); j++ {
			if w < uaWeights[j] {
				i = j
				break
			}
			w -= uaWeights[j]
		}
		g.sessions = append(g.sessions, session{id: fmt.Sprintf("s%06d", g.seq), first: now, last: now, ua: userAgents[i], country: g.pick(countries, ctyWeight)})
	}
	s := &g.sessions[g.rng.IntN(len(g.sessions))]
	s.last = now
	return s
}

// next returns the records of the second before now. The rate swings by
// a third over ten minutes, so the charts have a shape.
func (g *generator) next(now time.Time) []metrics.Record {
	rate := g.rate * (1 + math.Sin(2*math.Pi*float64(now.Unix()%600)/600)/3)
	n := g.poisson(rate)
	recs := make([]metrics.Record, 0, n*3)
	start := now.Add(-time.Second)
	for range n {
		at := start.Add(time.Duration(g.rng.Int64N(int64(time.Second))))
		s := g.session(at)
		recs = append(recs, g.access(at, s))
		// Each page pulls a couple of assets through the CDN.
		for range g.poisson(1.5) {
			recs = append(recs, g.cdn(at.Add(time.Duration(g.rng.IntN(400))*time.Millisecond), s))
		}
		if g.rng.Float64() < 0.1 {
			recs = append(recs, metrics.Record{Type: metrics.TypePageview, App: g.app, Arrival: ts(at.Add(2 * time.Second)),
				PageLoadTime: math.Round(g.lognormal(1800, 0.5)), Country: s.country, UseragentName: s.ua.name, UseragentOS: s.ua.os, UseragentDevice: s.ua.device})
		}
	}
	if now.Sub(g.lastSamp) >= 10*time.Second {
		interval := 10.0
		if !g.lastSamp.IsZero() {
			interval = now.Sub(g.lastSamp).Seconds()
		}
		recs = append(recs, metrics.Record{Type: metrics.TypeSessions, App: g.app, Time: ts(now), Interval: interval,
			Active: float64(len(g.sessions)), Ended: g.ended, EndedSeconds: math.Round(g.endedSec)})
		g.lastSamp, g.ended, g.endedSec = now, 0, 0
	}
	if g.set != "" && now.Sub(g.lastAddr) >= 20*time.Second {
		addr := blocked[g.rng.IntN(len(blocked))]
		recs = append(recs, metrics.Record{Type: metrics.TypeAddress, Set: g.set, Address: addr, Time: ts(now),
			Expiry: ts(now.Add(2 * time.Minute)), Description: "blocked by the WAF"})
		g.lastAddr = now
	}
	return recs
}

func (g *generator) access(at time.Time, s *session) metrics.Record {
	path := paths[g.rng.IntN(len(paths))]
	method := g.pick([]string{"GET", "POST", "HEAD", "PUT"}, []float64{85, 12, 2, 1})
	status := 200
	switch x := g.rng.Float64(); {
	case x < 0.06:
		status = 404
	case x < 0.08:
		status = 301
	case x < 0.16:
		status = 304
	case x < 0.175:
		status = 500
	case x < 0.185:
		status = 503
	case x < 0.19:
		status = 403
	}
	cache := g.pick([]string{"hit", "miss", "pass", "stale", "error"}, []float64{55, 20, 20, 3, 2})
	server := 0.0
	if cache != "hit" && cache != "stale" {
		server = math.Round(g.lognormal(45, 0.7))
	}
	queue := 0.0
	delivery := "delivered"
	switch {
	case status == 503:
		delivery, queue = "rejected", math.Round(g.lognormal(800, 0.3))
	case g.rng.Float64() < 0.02:
		delivery = "client_abort"
	case g.rng.Float64() < 0.05:
		queue = math.Round(g.lognormal(20, 0.8))
	}
	ttfb := server + queue + math.Round(g.lognormal(3, 0.5))
	elapsed := ttfb + math.Round(g.lognormal(8, 0.9))
	r := metrics.Record{
		App: g.app, Arrival: ts(at), Completed: ts(at.Add(time.Duration(elapsed) * time.Millisecond)),
		BytesIn: int64(g.lognormal(700, 0.4)), BytesOut: int64(g.lognormal(18000, 1.2)), CacheControl: "public, max-age=60",
		CacheSource: cache, Country: s.country, DeliveryStatus: delivery, Elapsed: elapsed, InternalTransportLatency: 1,
		Location: "local-edge-1", PeerAddress: fmt.Sprintf("198.51.100.%d", g.rng.IntN(250)+1), QueueLatency: queue,
		RequestAddress: fmt.Sprintf("203.0.113.%d", g.rng.IntN(250)+1), RequestID: "req-" + strconv.FormatUint(g.rng.Uint64(), 36),
		RequestMethod: method, RequestHost: "shop.example.com", RequestPort: 443, RequestPath: path, RequestProtocol: "HTTP/2",
		RequestURL: "https://shop.example.com" + path, ResponseContentType: "text/html; charset=utf-8", ServerAddress: "10.0.0.5:8080",
		ServerLatency: server, StatusCode: status, SessionID: s.id, StatusCodeAndURL: strconv.Itoa(status) + " https://shop.example.com" + path,
		TLSCipher: "TLS_AES_128_GCM_SHA256", TLSVersion: "TLSv1.3", TTFB: ttfb,
		Useragent: s.ua.full, UseragentDevice: s.ua.device, UseragentName: s.ua.name, UseragentOS: s.ua.os,
	}
	if g.rng.Float64() < 0.01 {
		r.Threat = threats[g.rng.IntN(len(threats))]
		r.Webcontrols = []string{"1"}
		r.StatusCode, r.DeliveryStatus, r.CacheSource = 403, "blocked", "synthetic"
	}
	return r
}

func (g *generator) cdn(at time.Time, s *session) metrics.Record {
	cache := g.pick([]string{"hit", "miss", "stale", "pass"}, []float64{88, 8, 2, 2})
	ttfb := math.Round(g.lognormal(6, 0.6))
	if cache != "hit" {
		ttfb += math.Round(g.lognormal(60, 0.5))
	}
	status := 200
	if g.rng.Float64() < 0.1 {
		status = 304
	}
	path := assets[g.rng.IntN(len(assets))]
	return metrics.Record{Type: metrics.TypeCDN, App: g.app, Arrival: ts(at), BytesIn: int64(g.lognormal(400, 0.3)),
		BytesOut: int64(g.lognormal(40000, 1.0)), CacheSource: cache, Country: s.country, Elapsed: ttfb + math.Round(g.lognormal(4, 0.7)),
		Location: pops[g.rng.IntN(len(pops))], RequestMethod: "GET", RequestPath: path, StatusCode: status, TTFB: ttfb,
		Useragent: s.ua.full, UseragentDevice: s.ua.device, UseragentName: s.ua.name, UseragentOS: s.ua.os}
}
