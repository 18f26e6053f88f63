package ledger

import "testing"

func TestRolePermissions(t *testing.T) {
	tests := []struct {
		desc string
		role Role
		perm string
		want bool
	}{
		{"owner manages keys", RoleOwner, PermKeysManage, true},
		{"admin cannot manage keys", RoleAdmin, PermKeysManage, false},
		{"owner changes partners", RoleOwner, PermPartnersWrite, true},
		{"admin changes partners", RoleAdmin, PermPartnersWrite, true},
		{"member reads partners", RoleMember, PermPartnersRead, true},
		{"member cannot change partners", RoleMember, PermPartnersWrite, false},
		{"member cannot change settings", RoleMember, PermSettingsWrite, false},
		{"an unknown role holds nothing", Role("guest"), PermPartnersRead, false},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := tt.role.Can(tt.perm); got != tt.want {
				t.Errorf("%s.Can(%s) = %v, want %v", tt.role, tt.perm, got, tt.want)
			}
		})
	}
}
