package localaws

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"

	"cads/shared/ddb"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A server in the same process may answer before the transport's write
// loop is done with the request. The test holds the write loop right
// after the request is on the wire until the SDK reads the response body
// (it has closed its request body by then), as a paused goroutine would,
// and requires that the transport still sees the request as written and
// the SDK gets the whole answer.
func TestLocalClientSurvivesAnswerBeforeWriteLoopEnds(t *testing.T) {
	blob := strings.Repeat("x", 20_000) // more than the transport reads with the headers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{"Item":{"PK":{"S":"k"},"blob":{"S":"`+blob+`"}}}`)
	}))
	defer srv.Close()

	st := &stall{release: make(chan struct{}), wrote: make(chan error, 1), done: t.Context().Done()}
	c, err := DynamoClient(t.Context(), srv.URL, func(o *dynamodb.Options) {
		o.Retryer = aws.NopRetryer{}
		// As localConfig's client, with a dialer that holds the write loop.
		o.HTTPClient = ddb.OwnBodies(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			var d net.Dialer
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				st.Conn = conn
				return st, nil
			}
		}))
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { st.wrote <- i.Err },
	})
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("T"), Key: attrs{"PK": s("k")}})
	if err != nil {
		t.Fatalf("GetItem: %v (write loop: %v)", err, st.writeErr)
	}
	if st.writeErr != nil {
		t.Errorf("the transport failed the request it had sent: %v", st.writeErr)
	}
	if got, ok := out.Item["blob"].(*ddbtypes.AttributeValueMemberS); !ok || got.Value != blob {
		t.Errorf("item blob of %d bytes, want %d", len(got.Value), len(blob))
	}
}

// stall is the one connection of a client: its write that completes the
// first request returns only once the client reads beyond the first
// buffer of the response, and that read goes on only once the write loop
// has reported the request written.
type stall struct {
	net.Conn
	release chan struct{}
	wrote   chan error
	done    <-chan struct{}

	mu       sync.Mutex
	sent     bytes.Buffer
	held     bool
	reads    int
	writeErr error
}

func (s *stall) Write(b []byte) (int, error) {
	n, err := s.Conn.Write(b)
	s.mu.Lock()
	s.sent.Write(b[:n])
	hold := !s.held && complete(s.sent.Bytes())
	s.held = s.held || hold
	s.mu.Unlock()
	if hold {
		select {
		case <-s.release:
		case <-s.done:
		}
	}
	return n, err
}

func (s *stall) Read(b []byte) (int, error) {
	s.mu.Lock()
	s.reads++
	second := s.reads == 2
	s.mu.Unlock()
	if second {
		close(s.release)
		select {
		case s.writeErr = <-s.wrote:
		case <-s.done:
		}
	}
	return s.Conn.Read(b)
}

// complete reports whether raw holds a whole request with a Content-Length.
func complete(raw []byte) bool {
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return false
	}
	for line := range strings.SplitSeq(string(head), "\r\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return err == nil && len(body) >= n
		}
	}
	return false
}
