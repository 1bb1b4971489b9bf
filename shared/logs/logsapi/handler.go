// Package logsapi is the logs function's HTTP handler: it reads the
// requests of the logs and archived-logs routes, calls package logs (the
// queries, the ingest of custom records, the archives) and renders the
// answers. Package logs links no HTTP layer, so the queue workers that
// run its ingest and archives (the aggregator, the task worker) do not
// either.
package logsapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/logs"
	"cads/shared/routes"
)

type handler struct {
	st      logs.Store
	dec     Deciders
	log     *slog.Logger
	schemas []logs.LogSchemaJSON
}

// NewHandler serves GET and POST /v2/applications/{id}/logs, GET
// /v2/log-schemas and the archived logs (archive.go). The
// authorizer has allowed the route; the application must be in the
// caller's account (404 otherwise).
func NewHandler(st logs.Store, dec Deciders, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, log: log, schemas: logs.LogSchemas()}
	mux := apigw.NewRouter(routes.Logs)
	mux.HandleFunc("getLogSchemas", apigw.HandleInAccount(log, h.logSchemas))
	mux.HandleFunc("getArchivedLogs", apigw.HandleInAccount(log, h.listArchives))
	mux.HandleFunc("getArchivedLogsApplicationsByIdByLogType", apigw.HandleInAccount(log, h.downloadArchive))
	mux.HandleFunc("deleteArchivedLogsApplicationsByIdByLogType", apigw.HandleInAccount(log, h.deleteArchives))
	mux.HandleFunc("getApplicationsByIdLogs", apigw.HandleInAccount(log, h.get))
	mux.HandleFunc("postApplicationsByIdLogs", apigw.HandleInAccount(log, h.postLogs))
	return mux
}

// logSchemas answers GET /v2/log-schemas: the same for every account.
func (h *handler) logSchemas(*http.Request, caller.Principal) (int, any, error) {
	return http.StatusOK, h.schemas, nil
}

// appID reads {id}; an id this service could not have made is a 404.
func appID(r *http.Request) (string, error) { return apigw.PathID(r, "id", "application") }

// get answers a log query (logs.RunQuery) as JSON or CSV.
func (h *handler) get(r *http.Request, p caller.Principal) (int, any, error) {
	ctx := r.Context()
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	q, err := logs.ParseQuery(r.URL.Query(), h.st.Now())
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	res, err := logs.RunQuery(ctx, h.st, p.AccountID, app, q)
	if err != nil {
		return 0, nil, err
	}
	h.log.DebugContext(ctx, "log query", "records_examined", res.Examined, "work", res.Work, "cut", cutName(res.Cut), "request_id", apigw.RequestID(ctx))
	if q.CSV {
		// A proxy response is one body: render it whole (bounded by limit
		// and by the response budget).
		var buf bytes.Buffer
		if err := logs.WriteCSV(&buf, q, res); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, &apigw.Binary{ContentType: "text/csv; charset=utf-8", Data: buf.Bytes(), Headers: logs.CSVHeaders(q, res)}, nil
	}
	return http.StatusOK, logs.Document(q, res), nil
}

func cutName(c *logs.Cut) string {
	if c == nil {
		return ""
	}
	return c.Budget
}

// postLogs is POST /v2/applications/{id}/logs: custom records, one or an
// array (the body limit is apigw.MaxJSONBody, 413 past it).
func (h *handler) postLogs(r *http.Request, p caller.Principal) (int, any, error) {
	if t := r.URL.Query().Get("type"); t != "" && t != logs.TypeCustom {
		return 0, nil, domain.Errorf(domain.Invalid, "type: only custom logs can be submitted")
	}
	var raw json.RawMessage
	if err := apigw.DecodeJSON(r, &raw, logs.MessageText); err != nil {
		return 0, nil, err
	}
	batch, err := logs.ParseCustom(raw, h.st.Now())
	if err != nil {
		return 0, nil, err
	}
	// Bad input is refused before any read; then the application.
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	out, err := logs.Ingest(r.Context(), h.st, p.AccountID, app, batch)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}
