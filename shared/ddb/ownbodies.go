package ddb

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// OwnBodies hands the transport a request body of its own, read in full
// from the SDK's.
//
// The SDK closes its request body as soon as the response arrives, and
// its body then answers WriteTo with io.EOF. net/http puts a body it does
// not know to be in memory on the wire before it has finished with it (it
// still reads the body once more to check for bytes beyond
// Content-Length), so a server that answers within that window has the
// SDK close the body under the transport's write loop, which takes the
// io.EOF for a failed write and closes the connection while the SDK reads
// the response: "use of closed network connection". A stand-in in the same
// process answers within microseconds; across a network it takes a pause
// of the write loop longer than the round trip (a garbage collection, a
// frozen Lambda), and then a conditional write the table applied would be
// sent again by the retry and refused by its own condition. A
// *bytes.Reader is one net/http knows: it writes headers and body in one
// go before the server can answer, and nothing the SDK does afterwards
// reaches it. Every client of the service is built with it (LoadConfig;
// the local stand-ins' clients).
func OwnBodies(next aws.HTTPClient) aws.HTTPClient {
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	return ownBodies{next}
}

type ownBodies struct{ next aws.HTTPClient }

func (c ownBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return c.next.Do(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close() // Do owns the body, as http.Client.Do does
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	own := r.Clone(r.Context())
	own.Body, own.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c.next.Do(own)
}
