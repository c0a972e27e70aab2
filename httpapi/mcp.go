package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/mcp"
	"github.com/hippocam/hippocam/memory/library"
)

// MCP over Streamable HTTP at /mcp (package mcp, docs/mcp.md): the same tools and resources as
// hippocam mcp over stdio, behind the same keys as every other endpoint. Each request is
// authenticated (a missing or wrong key is the usual 401, before MCP sees it) and served by the
// MCP server of the tenant its key names.

// MCP returns the MCP server over this server's store and session service, with the REST API's
// renderings as its views: what /mcp serves, and what hippocam mcp serves over stdio. cfg gives
// the rest of its configuration; its Store, Sessions, Views and Logger are this server's.
func (s *Server) MCP(cfg mcp.Config) (*mcp.Server, error) {
	cfg.Store, cfg.Sessions, cfg.Views, cfg.Logger = s.cfg.Store, s.cfg.Sessions, views{s}, s.log
	return mcp.New(cfg)
}

// mcpRoute is the handler of /mcp. The cluster updates of outcomes are left to the service's
// job workers, as POST /api/sessions/{id}/outcome leaves them.
func (s *Server) mcpRoute() func(http.ResponseWriter, *http.Request, string) {
	m, err := s.MCP(mcp.Config{Version: s.cfg.Version})
	if err != nil { // only for a server without a store or a service, which New refuses
		return func(w http.ResponseWriter, r *http.Request, tenant string) { s.restError(w, r, err) }
	}
	h := m.HTTPHandler(s.cfg.MaxBodyBytes)
	return func(w http.ResponseWriter, r *http.Request, tenant string) {
		h.ServeHTTP(w, r.WithContext(mcp.WithTenant(r.Context(), tenant)))
	}
}

// views gives package mcp the REST API's documents.
type views struct{ s *Server }

var _ mcp.Views = views{}

// Expansion is the body of GET /api/sessions/{id}/expand.
func (v views) Expansion(ctx context.Context, tenant, id string) ([]byte, error) {
	sess, err := v.s.cfg.Store.Session(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	all, err := expansion(ctx, hippocam.SessionArchive(v.s.cfg.Store, tenant, id), sess.Context)
	if err != nil {
		return nil, err
	}
	return encodeBody(map[string]any{"messages": all})
}

// LessonsFile is the body of GET /api/lessons/export without ?cluster.
func (v views) LessonsFile(ctx context.Context, tenant string) ([]byte, error) {
	clusters, err := v.s.lessonsClusters(ctx, tenant, "")
	if err != nil {
		return nil, err
	}
	md, _, err := lessonsFile(clusters)
	return md, err
}

// Lessons are the lessons of GET /api/lessons without ?cluster and ?status.
func (v views) Lessons(ctx context.Context, tenant string) ([]mcp.Lesson, error) {
	clusters, err := v.s.lessonsClusters(ctx, tenant, "")
	if err != nil {
		return nil, err
	}
	out := []mcp.Lesson{}
	for i := range clusters {
		view, err := library.ViewLessons(clusters[i].State)
		if err != nil {
			return nil, fmt.Errorf("render cluster %s: %w", clusters[i].ID, err)
		}
		for _, l := range view.Lessons {
			out = append(out, mcp.Lesson{Cluster: clusters[i].ID, LessonView: l})
		}
	}
	return out, nil
}

// encodeBody encodes v as writeJSON writes it.
func encodeBody(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
