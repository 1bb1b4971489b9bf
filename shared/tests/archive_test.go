package tests_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"strings"
	"testing"
	"time"

	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/tests"
)

// base is where the fixtures' requests go: an alias of the operator's
// application in the handler tests (env), a name that resolves nowhere.
const base = "http://" + alias

func TestOpenEveryFormat(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for name, up := range uploads(t, base) {
		t.Run(name, func(t *testing.T) {
			a, err := tests.Open(up.mediaType, up.data)
			if err != nil {
				t.Fatal(err)
			}
			c, err := tests.ParseConfig(a)
			if err != nil {
				t.Fatal(err)
			}
			if c.File != "test.json" || c.Probabilities != 1 {
				t.Fatalf("config %+v", c)
			}
			tbz, err := a.TarBzip2(now)
			if err != nil {
				t.Fatal(err)
			}
			// A bzip2 stream of a tar is returned as uploaded.
			if (up.mediaType == tests.TypeTarBzip2 || name == "bzip2 of tar") != bytes.Equal(tbz, up.data) {
				t.Fatalf("byte-identical = %v for %s", bytes.Equal(tbz, up.data), name)
			}
			got := untarBz2(t, tbz)
			if up.whole {
				for _, f := range configFiles(base) {
					if got[f.name] != f.body {
						t.Fatalf("converted archive lacks %s: has %v", f.name, names(got))
					}
				}
				if len(c.Models) != 2 || c.Models[1].File != "sessions/buy.json" || len(c.Users) != 1 {
					t.Fatalf("models %+v", c.Models)
				}
			} else if got["test.json"] != singleConfig(base) || len(got) != 1 {
				t.Fatalf("converted JSON configuration: %v", got)
			}
			// Deterministic: converting again gives the same bytes.
			again, _ := a.TarBzip2(now)
			if !bytes.Equal(again, tbz) {
				t.Fatal("conversion is not deterministic")
			}
		})
	}
}

func TestOpenTopLevelDirectory(t *testing.T) {
	var files []file
	for _, f := range configFiles(base) {
		files = append(files, file{"mytest/" + f.name, f.body})
	}
	a, err := tests.Open(tests.TypeTarGzip, gz(t, tarOf(t, files)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := tests.ParseConfig(a)
	if err != nil || c.File != "mytest/test.json" || c.Models[1].File != "mytest/sessions/buy.json" {
		t.Fatalf("%+v %v", c, err)
	}
	// Two top-level directories: no way to tell which test.json is meant.
	files = append(files, file{"other/x", "x"})
	a, _ = tests.Open(tests.TypeTar, tarOf(t, files))
	if _, err := tests.ParseConfig(a); !isStatus(err, 400, "no test.json") {
		t.Fatalf("err %v", err)
	}
}

func isStatus(err error, status int, msg string) bool {
	e, ok := domain.AsError(err)
	return ok && apigw.Status(err) == status && strings.Contains(e.Message, msg)
}

func TestOpenRefusesWhatIsNotWhatItClaims(t *testing.T) {
	files := configFiles(base)
	tr := tarOf(t, files)
	tgz := gz(t, tr)
	tbz := bz2(t, tr)
	zp := zipOf(t, files)

	flip := func(b []byte, at int) []byte {
		c := bytes.Clone(b)
		c[at] ^= 0xff
		return c
	}
	var symlink bytes.Buffer
	tw := tar.NewWriter(&symlink)
	_ = tw.WriteHeader(&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	_ = tw.Close()
	var zipCorrupt []byte
	{
		// A stored entry whose data no longer matches its CRC-32.
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "test.json", Method: zip.Store})
		_, _ = w.Write([]byte(files[0].body))
		_ = zw.Close()
		zipCorrupt = buf.Bytes()
		i := bytes.Index(zipCorrupt, []byte("probabilities"))
		zipCorrupt[i] = 'P'
	}

	cases := []struct {
		name, mediaType string
		data            []byte
		status          int
		msg             string
	}{
		{"empty", tests.TypeTar, nil, 400, "empty"},
		{"zip claimed as tar.gz", tests.TypeTarGzip, zp, 400, "not gzip"},
		{"tar.gz claimed as tar.bz2", tests.TypeTarBzip2, tgz, 400, "not bzip2"},
		{"tar claimed as zip", tests.TypeZip, tr, 400, "not a zip"},
		{"gzip of a non-tar claimed as tar.gz", tests.TypeTarGzip, gz(t, []byte("hello")), 400, "not a valid tar"},
		{"bzip2 of a non-tar claimed as tar.bz2", tests.TypeTarBzip2, bz2(t, []byte(strings.Repeat("x", 600))), 400, "not a valid tar"},
		{"truncated gzip", tests.TypeTarGzip, tgz[:len(tgz)-9], 400, "gzip"},
		{"corrupt gzip checksum", tests.TypeTarGzip, flip(tgz, len(tgz)-6), 400, "gzip"},
		{"truncated bzip2", tests.TypeTarBzip2, tbz[:len(tbz)/2], 400, "bzip2"},
		{"corrupt bzip2 block", tests.TypeTarBzip2, flip(tbz, len(tbz)/2), 400, "bzip2"},
		{"random bytes as tar", tests.TypeTar, bytes.Repeat([]byte{0x5a}, 1024), 400, "not a valid tar"},
		{"truncated zip", tests.TypeZip, zp[:len(zp)-30], 400, "zip"},
		{"zip entry with a bad CRC", tests.TypeZip, zipCorrupt, 400, "corrupt"},
		{"symlink", tests.TypeTar, symlink.Bytes(), 400, "not a regular file"},
		{"dot-dot", tests.TypeTar, tarOf(t, []file{{"../escape", "x"}}), 400, "leaves"},
		{"absolute", tests.TypeTar, tarOf(t, []file{{"/etc/x", "x"}}), 400, "relative"},
		{"duplicate", tests.TypeTar, tarOf(t, []file{{"a", "x"}, {"./a", "y"}}), 400, "twice"},
		{"too large", tests.TypeTar, make([]byte, tests.MaxArchiveBytes+1), 413, "at most"},
		{"gzip bomb", tests.TypeGzip, gz(t, make([]byte, tests.MaxUnpackedBytes+1)), 413, "decompresses"},
		{"unknown type", "text/plain", []byte("x"), 415, "not a test configuration type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tests.Open(c.mediaType, c.data)
			if !isStatus(err, c.status, c.msg) {
				t.Fatalf("err = %v, want %d containing %q", err, c.status, c.msg)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	withCfg := func(cfg string, extra ...file) *tests.Archive {
		a, err := tests.Open(tests.TypeTar, tarOf(t, append([]file{{"test.json", cfg}}, extra...)))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	noCfg, err := tests.Open(tests.TypeTar, tarOf(t, []file{{"README", "x"}}))
	if err != nil {
		t.Fatal(err)
	}
	session := `{"type":"user.StaticSession","requests":[{"name":"a","method":"GET","url":"http://127.0.0.1/"}]}`
	many := `{"type":"user.StaticSession","requests":[` + strings.Repeat(`{"name":"a","method":"GET","url":"http://127.0.0.1/"},`, tests.MaxRequests) + `{"name":"a","method":"GET","url":"http://127.0.0.1/"}]}`
	cases := []struct {
		name string
		a    *tests.Archive
		msg  string
	}{
		{"no test.json", noCfg, "no test.json"},
		{"not JSON", withCfg(`{`), "test.json: the JSON value is incomplete"},
		{"unknown field", withCfg(`{"probabilities":1,"modles":{}}`), `unknown field "modles"`},
		{"no probabilities", withCfg(`{"models":{"s":` + session + `}}`), "probabilities is required"},
		{"probability out of range", withCfg(`{"probabilities":1.5,"models":{"s":` + session + `}}`), "above 0 and at most 1"},
		{"no models", withCfg(`{"probabilities":1}`), "models is required"},
		{"bad session type", withCfg(`{"probabilities":1,"models":{"s":{"type":"x","requests":[]}}}`), `type "x" is not one of`},
		{"relative url", withCfg(`{"probabilities":1,"models":{"s":{"type":"user.StaticSession","requests":[{"name":"a","method":"GET","url":"/x"}]}}}`), "not an absolute http or https URL"},
		{"bad method", withCfg(`{"probabilities":1,"models":{"s":{"type":"user.StaticSession","requests":[{"name":"a","method":"TRACE","url":"http://127.0.0.1/"}]}}}`), `"TRACE" is not one of`},
		{"missing session file", withCfg(`{"probabilities":1,"models":{"s":{"file":"nope.json"}}}`), `no file "nope.json"`},
		{"file and more", withCfg(`{"probabilities":1,"models":{"s":{"file":"s.json","type":"user.StaticSession"}}}`, file{"s.json", session}), `holds only "file"`},
		{"file outside", withCfg(`{"probabilities":1,"models":{"s":{"file":"../s.json"}}}`), "must not leave"},
		{"bad session file", withCfg(`{"probabilities":1,"models":{"s":{"file":"s.json"}}}`, file{"s.json", `{"type":"user.StaticSession"}`}), "s.json: requests is required"},
		{"too many requests", withCfg(`{"probabilities":1,"models":{"s":` + many + `}}`), "at most 100 are accepted"},
		{"user without password", withCfg(`{"probabilities":1,"users":[{"username":"a"}],"models":{"s":` + session + `}}`), "users[0].password is required"},
		{"bad parameter type", withCfg(`{"probabilities":1,"parameters":{"p":{"type":"date","title":"t","description":"d"}},"models":{"s":` + session + `}}`), `"date" is not one of`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tests.ParseConfig(c.a)
			if !isStatus(err, 400, c.msg) {
				t.Fatalf("err = %v, want 400 containing %q", err, c.msg)
			}
		})
	}
}
