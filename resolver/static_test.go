package resolver

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestPassthroughReportsOnce: a target without a scheme, or with one of
// the transports erpc.Dial takes, is one address, the target itself,
// reported once; ResolveNow adds nothing.
func TestPassthroughReportsOnce(t *testing.T) {
	for _, target := range []string{"db.internal:31850", "10.0.0.1:31850", "udp://10.0.0.1:31850", "shm:///run/x.sock", "mem://a"} {
		w := newChanWatcher()
		r, err := Build(target, w)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if got := addrs(w.expectUpdate(t)); !slices.Equal(got, []string{target}) {
			t.Fatalf("%s: update %v", target, got)
		}
		r.ResolveNow()
		r.Close()
		if len(w.updates)+len(w.errs) != 0 {
			t.Fatalf("%s: more than one report", target)
		}
	}
}

func TestStatic(t *testing.T) {
	w := newChanWatcher()
	r, err := Build("static:///10.0.0.1:1,[fd00::2]:2,db.internal:3", w)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := []string{"10.0.0.1:1", "[fd00::2]:2", "db.internal:3"}
	if got := addrs(w.expectUpdate(t)); !slices.Equal(got, want) {
		t.Fatalf("update %v, want %v", got, want)
	}
}

// TestStaticRejectsMalformed: each malformed entry is refused, by name.
func TestStaticRejectsMalformed(t *testing.T) {
	for _, bad := range []string{"10.0.0.1", ":80", "a:0", "a:65536", "a:x", "", "fd00::1:80", "a:1:2"} {
		target := "static:///ok:1," + bad + ",ok:2"
		_, err := Build(target, newChanWatcher())
		if err == nil {
			t.Errorf("%s: accepted", target)
			continue
		}
		if !strings.Contains(err.Error(), `entry 2 "`+bad+`"`) {
			t.Errorf("%s: error %q does not name the entry", target, err)
		}
	}
}

func TestBuildUnknownScheme(t *testing.T) {
	if _, err := Build("nope:///x", newChanWatcher()); !errors.Is(err, ErrNoScheme) {
		t.Fatalf("err %v, want ErrNoScheme", err)
	}
}

// TestEqualIgnoresOrder: Equal compares sets, attributes included.
func TestEqualIgnoresOrder(t *testing.T) {
	a := []Address{{Addr: "x:1", Weight: 2}, {Addr: "y:1", Zone: "z", Attrs: map[string]string{"k": "v"}}}
	b := []Address{a[1], a[0]}
	if !Equal(a, b) {
		t.Fatal("reordered set differs")
	}
	c := []Address{a[0], {Addr: "y:1", Zone: "z", Attrs: map[string]string{"k": "w"}}}
	d := []Address{a[0], {Addr: "y:1", Zone: "z"}}
	e := []Address{a[0], a[1], a[1]}
	for i, other := range [][]Address{c, d, e, a[:1], nil} {
		if Equal(a, other) {
			t.Errorf("set %d equals a", i)
		}
	}
}
