package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources' URIs.
const (
	LessonsURI     = "hippocam://lessons.md"
	ExpandTemplate = "hippocam://sessions/{id}/expand"
	expandPrefix   = "hippocam://sessions/"
	expandSuffix   = "/expand"
)

func (t *tenantServer) addResources(srv *sdk.Server) {
	t.addLessons(srv)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: ExpandTemplate, Name: "session-expansion", Title: "Session expansion",
		MIMEType: "application/json",
		Description: "Every original message of a session, in order, as JSON: what the agent, its user and its tools sent and what " +
			"the model answered, however deep Hippocam has archived it."}, t.readExpansion)
	// A template cannot list its instances: the tenant's sessions join the list of resources.
	srv.AddReceivingMiddleware(t.listSessionResources)
}

// addLessons adds the lessons file (again: notify.go).
func (t *tenantServer) addLessons(srv *sdk.Server) {
	srv.AddResource(&sdk.Resource{URI: LessonsURI, Name: "lessons.md", Title: "Lessons file", MIMEType: "text/markdown",
		Description: "Every lesson learning across tasks keeps, in force or superseded, with its conditions, evidence, provenance " +
			"and history, as the Markdown lessons file Hippocam exports and imports."}, t.readLessons)
}

func (t *tenantServer) readLessons(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	md, _, err := t.cfg.Sessions.LessonsFile(ctx, t.tenant, "")
	if err != nil {
		return nil, t.resourceError(req.Params.URI, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: LessonsURI, MIMEType: "text/markdown", Text: string(md)}}}, nil
}

func (t *tenantServer) readExpansion(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := expandID(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	all, err := t.cfg.Sessions.Expansion(ctx, t.tenant, id)
	if err != nil {
		return nil, t.resourceError(uri, err)
	}
	body, err := encodeJSON(map[string]any{"messages": all})
	if err != nil {
		return nil, t.resourceError(uri, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
}

// listSessionResources adds the tenant's sessions, each as its expansion, to the last page of
// resources/list.
func (t *tenantServer) listSessionResources(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*sdk.ListResourcesResult)
		if err != nil || method != "resources/list" || !ok || list.NextCursor != "" {
			return res, err
		}
		infos, err := t.cfg.Store.Sessions(ctx, t.tenant)
		if err != nil {
			return nil, t.resourceError("resources/list", err)
		}
		for _, info := range infos {
			list.Resources = append(list.Resources, &sdk.Resource{URI: expandURI(info.ID), Name: "session-" + info.ID,
				Title: "Session " + info.ID, MIMEType: "application/json",
				Description: "Every original message of session " + info.ID + ", in order."})
		}
		return list, nil
	}
}

// encodeJSON encodes v as the REST API writes its bodies (HTML characters as they are, a newline
// at the end), so that a resource and its REST route give the same bytes.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// expandURI is the URI of a session's expansion. The id is percent-encoded but for the
// characters a URI template's simple expansion leaves as they are (letters, digits, -._~), so
// that the URI matches ExpandTemplate.
func expandURI(id string) string {
	var b strings.Builder
	b.WriteString(expandPrefix)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	b.WriteString(expandSuffix)
	return b.String()
}

// expandID reads the session id of an expansion's URI.
func expandID(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, expandPrefix)
	if !ok {
		return "", false
	}
	enc, ok := strings.CutSuffix(rest, expandSuffix)
	if !ok || enc == "" || strings.Contains(enc, "/") {
		return "", false
	}
	id, err := url.PathUnescape(enc)
	if err != nil {
		return "", false
	}
	return id, true
}
