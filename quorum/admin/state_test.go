package admin

import (
	"reflect"
	"testing"
	"time"

	inode "github.com/quorumlock/quorumlock/internal/node"
	"github.com/quorumlock/quorumlock/node"
)

// publicState copies every field the node reads: a field added to the
// node's State and not to the public one, or not copied, fails here.
func TestPublicStateCopiesEveryField(t *testing.T) {
	in := inode.State{Present: true, Holders: map[string]int64{"alice": 2}, Attempts: 3, TTL: time.Second, Fence: 7, Mode: "write",
		Forced: &inode.Forced{By: "ops", Via: "cli", At: time.Unix(1, 0), Removed: true}, Labels: map[string]string{"alice": "api-1"}}
	iv := reflect.ValueOf(in)
	for i := range iv.NumField() {
		if iv.Field(i).IsZero() {
			t.Fatalf("the test leaves State.%s zero: set it", iv.Type().Field(i).Name)
		}
	}
	out := reflect.ValueOf(publicState(in))
	if out.NumField() != iv.NumField() {
		t.Fatalf("node.State has %d fields, the node's State %d", out.NumField(), iv.NumField())
	}
	for i := range iv.NumField() {
		name := iv.Type().Field(i).Name
		got := out.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("node.State has no field %s", name)
			continue
		}
		want := iv.Field(i).Interface()
		if name == "Forced" {
			want = (*node.Forced)(in.Forced)
		}
		if !reflect.DeepEqual(got.Interface(), want) {
			t.Errorf("State.%s = %v, want %v", name, got.Interface(), want)
		}
	}
}
