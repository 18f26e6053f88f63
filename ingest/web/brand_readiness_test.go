package web

import "testing"

func TestGateCheckSaysTheNextStep(t *testing.T) {
	code := "set_commission_policy"
	if c := gateCheck("Commission terms", "fail", &code); c.OK() || c.Next != "Set the commission type and a positive rate." || c.Tab != "settings" {
		t.Fatalf("known step: %+v", c)
	}
	// A step this page has no words for yet is shown as the API names it.
	code = "some_new_step"
	if c := gateCheck("X", "fail", &code); c.Next != "some_new_step" || c.Tab != "" {
		t.Fatalf("unknown step: %+v", c)
	}
	if c := gateCheck("X", "pass", nil); !c.OK() || c.Next != "" {
		t.Fatalf("passing gate: %+v", c)
	}
}
