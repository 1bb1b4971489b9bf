package localaws

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/Admiral-Piett/goaws/app/gosqs"
	"github.com/Admiral-Piett/goaws/app/models"
	"github.com/Admiral-Piett/goaws/app/router"
	"github.com/sirupsen/logrus"
)

// Region and AccountID are what the local services report in ARNs (and
// what the SDK clients of this package are configured with).
const (
	Region    = "us-east-1"
	AccountID = "123456789012"
)

// sqsTick is how often goaws' PeriodicTasks returns messages whose
// visibility timeout ended (and moves them to a dead-letter queue). goaws'
// own main uses 1 s; a shorter tick makes redelivery happen close to the
// visibility timeout, as on SQS, at the cost of a lock sweep per tick.
const sqsTick = 100 * time.Millisecond

// goaws keeps all of its state in package variables: the queues
// (models.SyncQueues), topics (models.SyncTopics), the environment that
// queue URLs, ARNs and attribute defaults come from
// (models.CurrentEnvironment), and it logs through logrus' standard logger.
// So every goaws server in a process shares one set of queues. This package
// counts running servers: the first one to start resets that state and
// starts the single PeriodicTasks loop, the last one to stop ends it.
var goaws struct {
	mu      sync.Mutex
	running int
	quit    chan bool
	exited  chan struct{}
}

var bridgeLogrus sync.Once

// StartSQS serves goaws' SQS API on addr (default "127.0.0.1:0"; loopback
// only, unlike goaws' own main which binds 0.0.0.0) and runs goaws'
// PeriodicTasks, without which received messages never become visible
// again and never reach a dead-letter queue. ctx bounds only the start.
//
// goaws state is global: servers started while another one runs share its
// queues, and queue URLs carry the first server's port; a server started
// when none runs starts with no queues. stop may be called more than once. Create queues before
// starting consumers: goaws reads its queue map without locking in several
// handlers, so CreateQueue concurrent with traffic is a data race in goaws.
func StartSQS(ctx context.Context, addr string) (endpoint string, stop func(context.Context) error, err error) {
	bridgeLogrus.Do(func() {
		// goaws logs every message body at Info and a warning for every
		// empty long poll; keep that out of the project's logs unless
		// slog's debug level is on.
		std := logrus.StandardLogger()
		std.SetOutput(io.Discard)
		std.SetLevel(logrus.InfoLevel)
		std.AddHook(slogHook{})
	})
	started := false
	endpoint, stopServer, err := serve(ctx, "sqs", addr, router.New(), func(a *net.TCPAddr) {
		acquireGoaws(a.Port)
		started = true
	})
	if err != nil {
		if started {
			releaseGoaws()
		}
		return "", nil, err
	}
	var once sync.Once
	stop = func(ctx context.Context) error {
		err := stopServer(ctx)
		once.Do(releaseGoaws)
		return err
	}
	return endpoint, stop, nil
}

func acquireGoaws(port int) {
	goaws.mu.Lock()
	defer goaws.mu.Unlock()
	goaws.running++
	if goaws.running > 1 {
		return
	}
	// Equivalent of conf.LoadYamlConfig without a file: that function only
	// fills these globals (binding happens in goaws' main), but with no file
	// name it searches the working directory tree for any goaws.yaml, and
	// without it the attribute defaults stay 0, so a queue created without
	// VisibilityTimeout would redeliver at once.
	//
	// With a Region set, goaws builds queue URLs as
	// http://<region>.<host>:<port>/<account>/<name>: a host that does not
	// resolve. The SDK sends every call to its configured endpoint and goaws
	// only uses the URL's last path segment, so that does not matter; a
	// Region is what gives the ARNs their proper shape.
	models.CurrentEnvironment = models.Environment{
		Host:      "127.0.0.1",
		Port:      strconv.Itoa(port),
		Region:    Region,
		AccountID: AccountID,
		QueueAttributeDefaults: models.EnvQueueAttributes{
			VisibilityTimeout:      30,
			MaximumMessageSize:     262144,
			MessageRetentionPeriod: 345600,
		},
	}
	models.LogMessages = false
	models.SyncQueues.Lock()
	models.SyncQueues.Queues = map[string]*models.Queue{}
	models.SyncQueues.Unlock()
	models.SyncTopics.Lock()
	models.SyncTopics.Topics = map[string]*models.Topic{}
	models.SyncTopics.Unlock()

	goaws.quit = make(chan bool)
	goaws.exited = make(chan struct{})
	quit, exited := goaws.quit, goaws.exited
	go func() {
		defer close(exited)
		gosqs.PeriodicTasks(sqsTick, quit)
	}()
}

func releaseGoaws() {
	goaws.mu.Lock()
	defer goaws.mu.Unlock()
	goaws.running--
	if goaws.running == 0 {
		close(goaws.quit)
		<-goaws.exited
	}
}

// slogHook forwards goaws' logrus output to slog: errors as warnings,
// everything else at debug.
type slogHook struct{}

func (slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (slogHook) Fire(e *logrus.Entry) error {
	level := slog.LevelDebug
	if e.Level <= logrus.ErrorLevel {
		level = slog.LevelWarn
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	attrs := []any{"component", "goaws"}
	for k, v := range e.Data {
		attrs = append(attrs, k, v)
	}
	slog.Default().Log(ctx, level, e.Message, attrs...)
	return nil
}
