package tests

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	dsbzip2 "github.com/dsnet/compress/bzip2"

	"cads/shared/domain"
)

// Media types of a test configuration (docs/api.md#application-tests).
const (
	TypeJSON     = "application/json"
	TypeTar      = "application/x-tar"
	TypeZip      = "application/zip"
	TypeTarGzip  = "application/x-tar+gzip"
	TypeTarBzip2 = "application/x-tar+x-bzip2"
	TypeBzip2    = "application/x-bzip2"
	TypeGzip     = "application/x-gzip"
)

// MediaTypes lists the accepted types in the order messages name them.
var MediaTypes = []string{TypeJSON, TypeTar, TypeZip, TypeTarGzip, TypeTarBzip2, TypeBzip2, TypeGzip}

func AcceptedType(t string) bool {
	for _, m := range MediaTypes {
		if m == t {
			return true
		}
	}
	return false
}

// Size limits. An upload travels base64-encoded inside a Lambda event of
// at most 6 MB, and the archive a GET returns travels the same way back;
// docs/application-tests.md has the arithmetic.
const (
	// MaxArchiveBytes bounds a configuration as uploaded (the file itself).
	MaxArchiveBytes = 3_500 * 1024
	// MaxBodyBytes bounds a PUT/PATCH body: the file plus the form's
	// boundaries, headers and description.
	MaxBodyBytes = MaxArchiveBytes + 64*1024
	// MaxDownloadBytes bounds the tar.bz2 form an archive converts to.
	MaxDownloadBytes = 4 * 1024 * 1024
	// MaxUnpackedBytes bounds the decompressed content, so that a small
	// compressed bomb cannot exhaust the function's memory.
	MaxUnpackedBytes = 16 * 1024 * 1024
	// MaxFiles bounds the entries of an archive.
	MaxFiles = 1000
)

// File is a regular file of an archive.
type File struct {
	Name    string // slash-separated, relative, cleaned
	Data    []byte
	Mode    int64
	ModTime time.Time
}

// Archive is a configuration upload that has been checked to be what its
// media type claims.
type Archive struct {
	Type  string // the claimed and verified media type
	Raw   []byte // as uploaded
	Files []File // regular files in archive order
	// tar is the uncompressed tar stream when the upload is one (possibly
	// compressed); conversion to tar.bz2 then keeps it byte for byte.
	tar []byte
}

// Open checks that raw is a configuration of the given media type (a
// tar.bz2 must be a bzip2 stream holding a tar, a zip must open, ...) and
// reads its files. Anything that does not hold is a 400 naming the
// problem; too much content is a 413.
func Open(mediaType string, raw []byte) (*Archive, error) {
	if len(raw) == 0 {
		return nil, domain.Errorf(domain.Invalid, "the test configuration is empty")
	}
	if len(raw) > MaxArchiveBytes {
		return nil, domain.Errorf(domain.TooLarge, "the test configuration is %d bytes; at most %d are accepted", len(raw), MaxArchiveBytes)
	}
	a := &Archive{Type: mediaType, Raw: raw}
	var err error
	switch mediaType {
	case TypeJSON:
		a.Files = []File{{Name: ConfigFile, Data: raw, Mode: 0o644}}
	case TypeTar:
		a.tar = raw
	case TypeTarGzip, TypeGzip:
		var plain []byte
		if plain, err = gunzip(raw, mediaType); err != nil {
			return nil, err
		}
		if mediaType == TypeTarGzip || LooksLikeTar(plain) {
			a.tar = plain
		} else {
			a.Files = []File{{Name: ConfigFile, Data: plain, Mode: 0o644}}
		}
	case TypeTarBzip2, TypeBzip2:
		var plain []byte
		if plain, err = bunzip2(raw, mediaType); err != nil {
			return nil, err
		}
		if mediaType == TypeTarBzip2 || LooksLikeTar(plain) {
			a.tar = plain
		} else {
			a.Files = []File{{Name: ConfigFile, Data: plain, Mode: 0o644}}
		}
	case TypeZip:
		if a.Files, err = readZip(raw); err != nil {
			return nil, err
		}
	default:
		return nil, domain.Errorf(domain.Unsupported, "%q is not a test configuration type; send one of %s", mediaType, strings.Join(MediaTypes, ", "))
	}
	if a.tar != nil {
		if a.Files, err = readTar(a.tar, mediaType); err != nil {
			return nil, err
		}
	}
	return a, nil
}

var (
	GzipMagic  = []byte{0x1f, 0x8b}
	Bzip2Magic = []byte("BZh")
	ZipMagic   = []byte("PK\x03\x04")
	ZipEmpty   = []byte("PK\x05\x06")
)

func gunzip(raw []byte, claimed string) ([]byte, error) {
	if !bytes.HasPrefix(raw, GzipMagic) {
		return nil, domain.Errorf(domain.Invalid, "the configuration is not gzip-compressed, as %s claims", claimed)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "the configuration is not a valid gzip stream: %v", err)
	}
	return readAllLimited(zr, "gzip")
}

func bunzip2(raw []byte, claimed string) ([]byte, error) {
	if !bytes.HasPrefix(raw, Bzip2Magic) {
		return nil, domain.Errorf(domain.Invalid, "the configuration is not bzip2-compressed, as %s claims", claimed)
	}
	return readAllLimited(bzip2.NewReader(bytes.NewReader(raw)), "bzip2")
}

// readAllLimited decompresses everything (so a corrupt or truncated
// stream is found now: checksums are verified at its end) within
// MaxUnpackedBytes.
func readAllLimited(r io.Reader, format string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxUnpackedBytes+1))
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "the configuration is not a valid %s stream: %v", format, err)
	}
	if len(b) > MaxUnpackedBytes {
		return nil, domain.Errorf(domain.TooLarge, "the configuration decompresses to more than %d bytes", MaxUnpackedBytes)
	}
	return b, nil
}

// LooksLikeTar reports whether b starts with a tar header (POSIX or GNU
// magic at offset 257).
func LooksLikeTar(b []byte) bool {
	return len(b) >= 512 && (bytes.Equal(b[257:262], []byte("ustar")))
}

func readTar(b []byte, claimed string) ([]File, error) {
	tr := tar.NewReader(bytes.NewReader(b))
	var files []File
	seen := map[string]bool{}
	total := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, domain.Errorf(domain.Invalid, "the configuration is not a valid tar archive, as %s claims: %v", claimed, err)
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		default:
			return nil, domain.Errorf(domain.Invalid, "archive entry %q is not a regular file or a directory; links and devices are not accepted", h.Name)
		}
		name, err := cleanName(h.Name, seen)
		if err != nil {
			return nil, err
		}
		if len(files) == MaxFiles {
			return nil, domain.Errorf(domain.TooLarge, "the archive holds more than %d files", MaxFiles)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, domain.Errorf(domain.Invalid, "archive entry %q cannot be read: %v", h.Name, err)
		}
		if total += len(data); total > MaxUnpackedBytes {
			return nil, domain.Errorf(domain.TooLarge, "the archive's files hold more than %d bytes", MaxUnpackedBytes)
		}
		files = append(files, File{Name: name, Data: data, Mode: h.Mode & 0o777, ModTime: h.ModTime})
	}
	return files, nil
}

func readZip(raw []byte) ([]File, error) {
	if !bytes.HasPrefix(raw, ZipMagic) && !bytes.HasPrefix(raw, ZipEmpty) {
		return nil, domain.Errorf(domain.Invalid, "the configuration is not a zip archive, as %s claims", TypeZip)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "the zip archive does not open: %v", err)
	}
	if len(zr.File) > MaxFiles {
		return nil, domain.Errorf(domain.TooLarge, "the archive holds more than %d files", MaxFiles)
	}
	var files []File
	seen := map[string]bool{}
	total := 0
	for _, f := range zr.File {
		mode := f.Mode()
		if mode.IsDir() {
			continue
		}
		if !mode.IsRegular() {
			return nil, domain.Errorf(domain.Invalid, "archive entry %q is not a regular file or a directory; links and devices are not accepted", f.Name)
		}
		name, err := cleanName(f.Name, seen)
		if err != nil {
			return nil, err
		}
		rc, err := f.Open()
		if err != nil {
			return nil, domain.Errorf(domain.Invalid, "archive entry %q cannot be read: %v", f.Name, err)
		}
		// Reading to the end verifies the entry's CRC-32.
		data, err := io.ReadAll(io.LimitReader(rc, int64(MaxUnpackedBytes-total)+1))
		_ = rc.Close()
		if err != nil {
			return nil, domain.Errorf(domain.Invalid, "archive entry %q is corrupt: %v", f.Name, err)
		}
		if total += len(data); total > MaxUnpackedBytes {
			return nil, domain.Errorf(domain.TooLarge, "the archive's files hold more than %d bytes", MaxUnpackedBytes)
		}
		files = append(files, File{Name: name, Data: data, Mode: int64(mode.Perm()), ModTime: f.Modified.UTC()})
	}
	return files, nil
}

// cleanName makes an entry name relative and canonical, refusing names
// that would leave the archive's directory when extracted and duplicates.
func cleanName(name string, seen map[string]bool) (string, error) {
	n := strings.TrimPrefix(name, "./")
	if n == "" || strings.HasPrefix(n, "/") || strings.Contains(n, "\\") || strings.ContainsRune(n, 0) {
		return "", domain.Errorf(domain.Invalid, "archive entry %q: names must be relative slash-separated paths", name)
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == ".." {
			return "", domain.Errorf(domain.Invalid, "archive entry %q leaves the archive's directory", name)
		}
	}
	n = path.Clean(n)
	if seen[n] {
		return "", domain.Errorf(domain.Invalid, "archive entry %q appears twice", name)
	}
	seen[n] = true
	return n, nil
}

// IsTarBzip2 reports whether the upload is a bzip2 stream holding a tar,
// whatever its media type said (application/x-bzip2 may hold one).
func (a *Archive) IsTarBzip2() bool {
	return (a.Type == TypeTarBzip2 || a.Type == TypeBzip2) && a.tar != nil
}

// ErrTooLarge is returned by TarBzip2 when the converted archive would not
// fit in a response.
var ErrTooLarge = errors.New("converted archive too large")

// TarBzip2 returns the archive as application/x-tar+x-bzip2: the upload
// itself when it is a bzip2 stream holding a tar; else the uploaded tar
// (decompressed) compressed with bzip2; else (zip, JSON) a tar of its
// files, whose entries get modTime when the upload had none. The result
// is deterministic, so converting the same upload twice gives the same
// bytes.
func (a *Archive) TarBzip2(modTime time.Time) ([]byte, error) {
	if a.IsTarBzip2() {
		return a.Raw, nil
	}
	plain := a.tar
	if plain == nil {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range a.Files {
			mt := f.ModTime
			if mt.IsZero() || mt.Before(time.Unix(0, 0)) {
				mt = modTime
			}
			mode := f.Mode
			if mode == 0 {
				mode = 0o644
			}
			h := &tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Size: int64(len(f.Data)), Mode: mode, ModTime: mt.UTC().Truncate(time.Second)}
			if err := tw.WriteHeader(h); err != nil {
				return nil, fmt.Errorf("convert to tar: %w", err)
			}
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("convert to tar: %w", err)
			}
		}
		if err := tw.Close(); err != nil {
			return nil, fmt.Errorf("convert to tar: %w", err)
		}
		plain = buf.Bytes()
	}
	var out bytes.Buffer
	zw, err := dsbzip2.NewWriter(&out, &dsbzip2.WriterConfig{Level: dsbzip2.BestCompression})
	if err != nil {
		return nil, fmt.Errorf("bzip2 writer: %w", err)
	}
	if _, err := zw.Write(plain); err != nil {
		return nil, fmt.Errorf("bzip2: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("bzip2: %w", err)
	}
	if out.Len() > MaxDownloadBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, out.Len())
	}
	return out.Bytes(), nil
}
