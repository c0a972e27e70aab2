package httpapi

import (
	"net/http"

	"github.com/hippocam/hippocam/mcp"
)

// MCP over Streamable HTTP at /mcp (package mcp, docs/mcp.md): the same tools and resources as
// hippocam mcp over stdio, behind the same keys as every other endpoint. Each request is
// authenticated (a missing or wrong key is the usual 401, before MCP sees it) and served by the
// MCP server of the tenant its key names.

// MCP returns the MCP server over this server's store and session service: what /mcp serves.
// cfg gives the rest of its configuration; its Store, Sessions and Logger are this server's.
func (s *Server) MCP(cfg mcp.Config) (*mcp.Server, error) {
	cfg.Store, cfg.Sessions, cfg.Logger = s.cfg.Store, s.cfg.Sessions, s.log
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
