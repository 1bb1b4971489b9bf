package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

// archiveChunks counts the archive chunk items of account in the table,
// by blob.
func archiveChunks(t *testing.T, d testenv.Dynamo, account string) map[string]int {
	t.Helper()
	out, err := d.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(d.Table),
		FilterExpression:          aws.String("begins_with(PK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "LOGARCHIVE#" + account + "#"}}})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, it := range out.Items {
		pk := it[store.AttrPK].(*types.AttributeValueMemberS).Value
		n[pk[strings.LastIndexByte(pk, '#')+1:]]++
	}
	return n
}

func archiveOf(app string, from time.Time, blob string, size int) domain.LogArchive {
	return domain.LogArchive{Account: "a1", App: app, Type: "custom", From: from, To: from.Add(time.Hour), Size: size, Blob: blob,
		Chunks: (size + store.LogArchiveChunkBytes - 1) / store.LogArchiveChunkBytes, Created: time.Now().UTC(), Expires: time.Now().Add(24 * time.Hour).Unix()}
}

// Preparing the same range again replaces the archive, header and file:
// the replaced file's chunks go in the same transaction, other ranges'
// stay, and concurrent preparations leave exactly one file.
func TestLogArchiveReplacementDeletesTheOldChunks(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	for _, app := range []string{"app1", "app2"} {
		_, err := d.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.Table), Item: map[string]types.AttributeValue{
			store.AttrPK: &types.AttributeValueMemberS{Value: "APP#" + app}, store.AttrSK: &types.AttributeValueMemberS{Value: "APP"},
			"account": &types.AttributeValueMemberS{Value: "a1"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	data := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	hour := time.Now().UTC().Truncate(time.Hour)
	first := archiveOf("app1", hour, "blobone", store.LogArchiveChunkBytes+10)
	other := archiveOf("app2", hour, "blobother", 100)
	for _, a := range []domain.LogArchive{first, other} {
		if err := st.Logs.PutLogArchive(ctx, a, data(a.Size)); err != nil {
			t.Fatal(err)
		}
	}
	if got := archiveChunks(t, d, "a1"); got["blobone"] != 2 || got["blobother"] != 1 {
		t.Fatalf("chunks %v", got)
	}

	second := archiveOf("app1", hour, "blobtwo", 200)
	want := data(second.Size)
	if err := st.Logs.PutLogArchive(ctx, second, want); err != nil {
		t.Fatal(err)
	}
	if got := archiveChunks(t, d, "a1"); len(got) != 2 || got["blobtwo"] != 1 || got["blobother"] != 1 {
		t.Fatalf("after the replacement: chunks %v, want only blobtwo's 1 and blobother's 1", got)
	}
	hdr, err := st.Logs.GetLogArchive(ctx, "a1", "app1", "custom", hour, hour.Add(time.Hour), time.Now())
	if err != nil || hdr.Blob != "blobtwo" {
		t.Fatalf("header %+v %v", hdr, err)
	}
	if got, err := st.Logs.LogArchiveData(ctx, hdr); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the new file: %d bytes, %v", len(got), err)
	}

	// Concurrent preparations of one range: each reads the header, and
	// the write is conditional on it, so the loser reads again and
	// replaces the winner's file. Whatever the interleaving, one file.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := archiveOf("app1", hour, fmt.Sprintf("blobrace%d", i), 300)
			errs[i] = st.Logs.PutLogArchive(ctx, a, data(a.Size))
		}()
	}
	wg.Wait()
	hdr, err = st.Logs.GetLogArchive(ctx, "a1", "app1", "custom", hour, hour.Add(time.Hour), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := archiveChunks(t, d, "a1"); len(got) != 2 || got[hdr.Blob] != 1 || got["blobother"] != 1 {
		t.Fatalf("after concurrent preparations (errors %v): chunks %v, want only %s's 1 and blobother's 1", errs, got, hdr.Blob)
	}
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	if ok == 0 {
		t.Fatalf("no concurrent preparation succeeded: %v", errs)
	}
}
