// Command dlq lists the queues and their dead-letter queues, shows the
// messages a DLQ holds, and redrives them to the queue they came from.
//
//	dlq [-endpoint URL] queues [-prefix cads-local-]
//	dlq [-endpoint URL] list [-max 10] <dlq name or URL>
//	dlq [-endpoint URL] redrive [-max 100] [-to <queue>] <dlq name or URL>
//
// Without -endpoint it uses the SDK's default configuration (so
// AWS_ENDPOINT_URL_SQS, AWS_REGION and credentials apply); -endpoint is a
// local SQS server (make run logs it as "sqs: ready endpoint=...").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/dlq"
	"cads/infra/localaws"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dlq:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  dlq [-endpoint URL] queues [-prefix P]
  dlq [-endpoint URL] list [-max N] <dlq>
  dlq [-endpoint URL] redrive [-max N] [-to <queue>] <dlq>`

func run(ctx context.Context, args []string) error {
	top := flag.NewFlagSet("dlq", flag.ContinueOnError)
	endpoint := top.String("endpoint", "", "SQS endpoint of a local server (default: the SDK's configuration)")
	if err := top.Parse(args); err != nil {
		return err
	}
	if top.NArg() == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	c, err := client(ctx, *endpoint)
	if err != nil {
		return err
	}
	cmd, rest := top.Arg(0), top.Args()[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	max := fs.Int("max", 10, "at most this many messages")
	prefix := fs.String("prefix", "", "only queues whose name starts with this")
	to := fs.String("to", "", "redrive to this queue (default: the queue whose redrive policy names the DLQ)")
	if cmd == "redrive" {
		*max = 100
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer w.Flush()
	switch cmd {
	case "queues":
		qs, err := dlq.Queues(ctx, c, *prefix)
		if err != nil {
			return err
		}
		names := map[string]string{}
		for _, q := range qs {
			names[q.ARN] = q.Name
		}
		fmt.Fprintln(w, "QUEUE\tMESSAGES\tIN FLIGHT\tDEAD-LETTER QUEUE\tMAX RECEIVES")
		for _, q := range qs {
			d, mr := "-", "-"
			if q.DLQ != "" {
				d, mr = names[q.DLQ], strconv.Itoa(q.MaxReceives)
				if d == "" {
					d = q.DLQ
				}
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", q.Name, q.Messages, q.InFlight, d, mr)
		}
		return nil
	case "list", "redrive":
		if fs.NArg() != 1 {
			return fmt.Errorf("%s needs one DLQ name or URL\n%s", cmd, usage)
		}
		d, err := dlq.Resolve(ctx, c, fs.Arg(0))
		if err != nil {
			return err
		}
		if cmd == "list" {
			ms, err := dlq.Peek(ctx, c, d, *max)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s: about %d messages; showing %d\n", d.Name, d.Messages, len(ms))
			fmt.Fprintln(w, "ID\tRECEIVES\tSENT\tBODY")
			for _, m := range ms {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", m.ID, m.Receives, sent(m.SentTimestamp), oneLine(m.Body))
			}
			return nil
		}
		var target dlq.Queue
		if *to != "" {
			target, err = dlq.Resolve(ctx, c, *to)
		} else {
			target, err = dlq.SourceOf(ctx, c, d)
		}
		if err != nil {
			return err
		}
		n, err := dlq.Redrive(ctx, c, d, target, *max)
		fmt.Fprintf(w, "moved %d messages from %s to %s\n", n, d.Name, target.Name)
		return err
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

func client(ctx context.Context, endpoint string) (*sqs.Client, error) {
	if endpoint != "" {
		return localaws.SQSClient(ctx, endpoint)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	return sqs.NewFromConfig(cfg), nil
}

func sent(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return ms
	}
	return time.UnixMilli(n).UTC().Format(time.RFC3339)
}

// oneLine keeps a body on its row: compact JSON, else quoted, and clipped.
func oneLine(b string) string {
	var v any
	s := strconv.Quote(b)
	if json.Unmarshal([]byte(b), &v) == nil {
		if c, err := json.Marshal(v); err == nil {
			s = string(c)
		}
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
