package sessions

import (
	"fmt"
	"testing"
)

// The routings kept for later requests stay bounded: past maxRoutings the oldest added goes,
// replacing a key's routing keeps one entry, and a dropped routing leaves no trace.
func TestRoutingsKeepTheNewest(t *testing.T) {
	var rs routings
	for i := range maxRoutings + 2 {
		rs.add(fmt.Sprint(i), &routing{first: "f"})
	}
	rs.add("5", &routing{first: "g"}) // a replacement: nothing else goes
	if len(rs.m) != maxRoutings || rs.order.Len() != maxRoutings {
		t.Fatalf("%d routings in the map, %d in the order; want %d", len(rs.m), rs.order.Len(), maxRoutings)
	}
	if rs.get("0", "f") != nil || rs.get("1", "f") != nil || rs.get("2", "f") == nil || rs.get("5", "g") == nil {
		t.Fatal("the oldest two should have gone, the rest stayed")
	}
	rs.drop("5", nil)
	rs.add("new", &routing{first: "f"}) // room left by the drop: nothing else goes
	if rs.get("2", "f") == nil || rs.get("5", "g") != nil || len(rs.m) != rs.order.Len() {
		t.Fatalf("after a drop and an add: %d in the map, %d in the order", len(rs.m), rs.order.Len())
	}
}
