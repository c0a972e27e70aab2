package mcp

import (
	"context"
	"time"

	"github.com/hippocam/hippocam/sessions"
)

// Watch reads the tenant's sessions and clusters from the store every interval, while a client
// of the tenant is connected, and notifies what changed since the last reading as the session
// service's changes are: for a store that other processes change too (hippocam mcp beside a
// serve), whose changes the service does not see. A change this process made may be notified
// again at the next reading. It returns when ctx ends.
func (s *Server) Watch(ctx context.Context, tenant string, interval time.Duration) {
	var sess map[string]time.Time
	var clusters map[string]int64
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if t := s.server(tenant); t == nil || !connected(t.srv) {
			sess, clusters = nil, nil // read afresh when a client comes
			continue
		}
		infos, err := s.cfg.Store.Sessions(ctx, tenant)
		if err != nil {
			s.log.Warn("mcp: watching the store", logTenant, tenant, logError, err)
			continue
		}
		cs, err := s.cfg.Store.Clusters(ctx, tenant)
		if err != nil {
			s.log.Warn("mcp: watching the store", logTenant, tenant, logError, err)
			continue
		}
		nextSess := make(map[string]time.Time, len(infos))
		for _, info := range infos {
			nextSess[info.ID] = info.UpdatedAt
		}
		nextClusters := make(map[string]int64, len(cs))
		for _, c := range cs {
			nextClusters[c.ID] = c.Version
		}
		if sess != nil {
			for id, at := range nextSess {
				if before, ok := sess[id]; !ok {
					s.changed(sessions.Change{Kind: sessions.SessionCreated, Tenant: tenant, Session: id})
				} else if !before.Equal(at) {
					s.changed(sessions.Change{Kind: sessions.SessionUpdated, Tenant: tenant, Session: id})
				}
			}
			for id := range sess {
				if _, ok := nextSess[id]; !ok {
					s.changed(sessions.Change{Kind: sessions.SessionDeleted, Tenant: tenant, Session: id})
				}
			}
			for id, v := range nextClusters {
				if before, ok := clusters[id]; !ok || before != v {
					s.changed(sessions.Change{Kind: sessions.ClusterChanged, Tenant: tenant, Cluster: id})
				}
			}
		}
		sess, clusters = nextSess, nextClusters
	}
}
