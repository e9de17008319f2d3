package frontdoor

// What the external tests read of the front door's internals.

// TLSDebounce is how long Watch waits after a file event for more.
const TLSDebounce = tlsDebounce

// ManagementRoutes are an HTTP route of each management call.
var ManagementRoutes = managementRoutes
