package logs

// LowerArchiveBudgets lets tests reach the archive budgets with few records.
func (a *Archiver) LowerArchiveBudgets(records, bytes int) {
	a.budget, a.maxBytes = records, bytes
}
