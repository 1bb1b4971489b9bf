package domain

// InstallPlan is everything a fresh installation starts with.
type InstallPlan struct {
	Installation Installation
	Root         Account
	Roles        []Role
	Operator     Principal
	Grants       []Grant
	Key          AccessKey
}
