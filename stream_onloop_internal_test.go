package erpc

import "testing"

// TestStreamMethodsStayOnLoop: the internal stream methods touch the loop's
// stream state, so a handoff (which the OS descheduling the loop can cause
// as well as a slow handler) must never move them off the loop.
func TestStreamMethodsStayOnLoop(t *testing.T) {
	srv := NewServer()
	if err := srv.HandleStream("S", func(ServerStream) error { return nil }); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range []string{streamOpenMethod, streamXchgMethod} {
		h := srv.table.byID[methodID(name)]
		if h == nil {
			t.Fatalf("%s is not registered", name)
		}
		found++
		if !h.onLoop {
			t.Errorf("%s may be handed off the loop", name)
		}
	}
	if found != 2 {
		t.Fatalf("checked %d methods", found)
	}
}
