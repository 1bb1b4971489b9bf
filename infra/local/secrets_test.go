package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"cads/infra/local/localtest"
)

// TestNoSecretAfterCreation makes every kind of secret the API hands out
// (the bootstrap's operator key, a user's key, a session key, a service
// user's key), uses each of them, reads every listing that describes them,
// and then checks that no secret appears in any log line of the whole run
// or in any response but the one that created it.
func TestNoSecretAfterCreation(t *testing.T) {
	p, logs := localtest.Start(t)
	var later bytes.Buffer // every response after the creating ones
	do := func(method, path, secret string, body any, keep bool) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, p.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
		if !keep {
			later.Write(raw)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	op := p.Bootstrap.Secret
	root := "/v2/accounts/" + p.Bootstrap.RootAccount
	secrets := []string{op}

	u := do("POST", "/v2/users", op, map[string]any{"email": "s@example.com"}, false)
	uid := u["id"].(string)
	k := do("POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer", "account": root}, true)
	secrets = append(secrets, k["secret_key"].(string))
	sess := do("POST", "/v2/users/self/authorization", op, map[string]any{"account": root}, true)
	secrets = append(secrets, sess["secret_key"].(string))
	su := do("POST", root+"/service-users", op, map[string]any{"name": "ci"}, true)
	keys, _ := su["access_keys"].([]any)
	if len(keys) != 1 {
		t.Fatalf("service user: %v", su)
	}
	secrets = append(secrets, keys[0].(map[string]any)["secret_key"].(string))

	// Use every secret, then read everything that describes them.
	for _, s := range secrets[1:] {
		do("GET", "/v2/users/self/authorization", s, nil, false)
	}
	do("GET", "/v2/users/"+uid+"/access-keys", op, nil, false)
	do("GET", "/v2/users/self/access-keys", op, nil, false)
	do("GET", root+"/service-users", op, nil, false)
	do("GET", root+"/service-users/"+su["id"].(string), op, nil, false)
	do("GET", "/v2/users/self/authorization?method=GET&path=/v2/users", op, nil, false)
	// A refused request logs its explanation: still no secret.
	req, _ := http.NewRequest("GET", p.URL+"/v2/users", nil)
	req.Header.Set("Authorization", "Bearer "+secrets[1])
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
	}
	_ = p.Close(context.Background())

	for i, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("secret %d appears in the logs", i)
		}
		if strings.Contains(later.String(), s) {
			t.Errorf("secret %d appears in a response after its creation", i)
		}
		// Nor its random part alone.
		if r := s[strings.LastIndexByte(s, '_')+1:]; strings.Contains(logs.String(), r) || strings.Contains(later.String(), r) {
			t.Errorf("the random part of secret %d leaks", i)
		}
	}
	if logs.String() == "" || later.Len() == 0 {
		t.Fatal("nothing captured: the test would prove nothing")
	}
}
