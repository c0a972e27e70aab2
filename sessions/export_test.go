package sessions

// WaitRouting waits for the routing this process keeps for the session to finish; false when it
// keeps none. Tests use it to order a slow router's end before the session's next request
// without timing anything.
func WaitRouting(s *Service, tenant, id string) bool {
	s.routes.mu.Lock()
	r := s.routes.m[routingKey(tenant, id)]
	s.routes.mu.Unlock()
	if r == nil {
		return false
	}
	<-r.done
	return true
}
