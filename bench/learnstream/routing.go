package learnstream

import "fmt"

// Routing compares where a condition put the tasks with their hidden sources.
//
//   - Agreement is the share of pairs of tasks on which the two agree: put in one cluster when
//     they share a source, in different ones (or none) when they do not (the Rand index). 1 is
//     a perfect partition; a single cluster for a stream of several sources scores the share of
//     pairs that share a source.
//   - OverSplit counts the clusters beyond the first that each source's tasks were spread over,
//     summed over sources; Merged counts the sources beyond the first that each cluster holds,
//     summed over clusters.
//   - Stateless counts the tasks that ran without memory because the router gave up on them.
//
// A task that ran without a cluster is a cluster of its own.
type Routing struct {
	Agreement float64 `json:"agreement"`
	OverSplit int     `json:"over_split"`
	Merged    int     `json:"merged"`
	Stateless int     `json:"stateless"`
}

// routing compares placed (each task's cluster, "" for none, in stream order) with the tasks'
// sources.
func routing(tasks []Task, placed []string) *Routing {
	groups := make([]string, len(placed))
	for i, c := range placed {
		if c == "" {
			c = fmt.Sprintf("\x00alone %d", i)
		}
		groups[i] = c
	}
	r := &Routing{Agreement: 1}
	pairs, agree := 0, 0
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			pairs++
			if (tasks[i].Source == tasks[j].Source) == (groups[i] == groups[j]) {
				agree++
			}
		}
	}
	if pairs > 0 {
		r.Agreement = float64(agree) / float64(pairs)
	}
	clustersOf, sourcesOf := map[string]map[string]bool{}, map[string]map[string]bool{}
	for i, g := range groups {
		src := tasks[i].Source
		if clustersOf[src] == nil {
			clustersOf[src] = map[string]bool{}
		}
		if sourcesOf[g] == nil {
			sourcesOf[g] = map[string]bool{}
		}
		clustersOf[src][g], sourcesOf[g][src] = true, true
	}
	for _, cs := range clustersOf {
		r.OverSplit += len(cs) - 1
	}
	for _, ss := range sourcesOf {
		r.Merged += len(ss) - 1
	}
	return r
}
