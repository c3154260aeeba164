package store

// Test helpers for the external tests (package store_test, memstore_test.go), which run
// storetest.MemStore beside the file store: storetest imports store, so those tests cannot be in
// package store.
var (
	ConfigForTest   = testConfig
	OpenStarted     = openStarted
	MustPut         = mustPut
	MessageForTest  = testMessage
	Bodyf           = bodyf
	GetAll          = getAll
	WaitDispatched  = waitDispatched
	BornHostForTest = testBornHost
)
