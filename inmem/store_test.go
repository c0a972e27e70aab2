package inmem_test

import (
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) hippocam.Store {
		st := inmem.New()
		t.Cleanup(func() { st.Close() })
		return st
	})
}
