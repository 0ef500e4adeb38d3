package toolsearch

// For the external test package (fusion_use_test.go), which imports
// modelapi: that package imports this one, so its benchmark cannot live
// here.
var (
	FusionCorpus = fusionCorpus
	ReportFusion = reportFusion
)

type QuerySet = querySet
