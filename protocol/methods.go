package protocol

// MCP method names.
const (
	MethodInitialize  = "initialize"
	MethodInitialized = "notifications/initialized"
	MethodPing        = "ping"

	MethodToolsList        = "tools/list"
	MethodToolsCall        = "tools/call"
	MethodToolsListChanged = "notifications/tools/list_changed"

	MethodResourcesList          = "resources/list"
	MethodResourcesRead          = "resources/read"
	MethodResourcesListChanged   = "notifications/resources/list_changed"
	MethodResourcesUpdated       = "notifications/resources/updated"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodResourcesSubscribe     = "resources/subscribe"
	MethodResourcesUnsubscribe   = "resources/unsubscribe"

	MethodPromptsList        = "prompts/list"
	MethodPromptsGet         = "prompts/get"
	MethodPromptsListChanged = "notifications/prompts/list_changed"

	MethodCancelled       = "notifications/cancelled"
	MethodProgress        = "notifications/progress"
	MethodLoggingSetLevel = "logging/setLevel"
	MethodLoggingMessage  = "notifications/message"

	MethodCompletionComplete = "completion/complete"

	// Task methods (experimental in 2025-11-25); either side may be the
	// requestor.
	MethodTasksGet    = "tasks/get"
	MethodTasksResult = "tasks/result"
	MethodTasksCancel = "tasks/cancel"
	MethodTasksList   = "tasks/list"
	MethodTasksStatus = "notifications/tasks/status"

	// Requests a server sends to the client.
	MethodRootsList             = "roots/list"
	MethodRootsListChanged      = "notifications/roots/list_changed"
	MethodSamplingCreateMessage = "sampling/createMessage"
	MethodElicitationCreate     = "elicitation/create"
	MethodElicitationComplete   = "notifications/elicitation/complete"

	// 2026-07-28 (modern era).
	MethodServerDiscover            = "server/discover"
	MethodSubscriptionsListen       = "subscriptions/listen"
	MethodSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	MethodTasksUpdate               = "tasks/update"
)

// methodName decodes a quoted method name. Known names come back as the
// package's constants, so classifying a frame allocates no string for them.
func methodName(quoted []byte) string {
	switch string(quoted[1 : len(quoted)-1]) {
	case MethodInitialize:
		return MethodInitialize
	case MethodInitialized:
		return MethodInitialized
	case MethodPing:
		return MethodPing
	case MethodToolsList:
		return MethodToolsList
	case MethodToolsCall:
		return MethodToolsCall
	case MethodToolsListChanged:
		return MethodToolsListChanged
	case MethodResourcesList:
		return MethodResourcesList
	case MethodResourcesRead:
		return MethodResourcesRead
	case MethodResourcesListChanged:
		return MethodResourcesListChanged
	case MethodResourcesUpdated:
		return MethodResourcesUpdated
	case MethodPromptsList:
		return MethodPromptsList
	case MethodPromptsGet:
		return MethodPromptsGet
	case MethodPromptsListChanged:
		return MethodPromptsListChanged
	case MethodCancelled:
		return MethodCancelled
	case MethodProgress:
		return MethodProgress
	case MethodLoggingSetLevel:
		return MethodLoggingSetLevel
	case MethodLoggingMessage:
		return MethodLoggingMessage
	case MethodRootsList:
		return MethodRootsList
	case MethodRootsListChanged:
		return MethodRootsListChanged
	case MethodSamplingCreateMessage:
		return MethodSamplingCreateMessage
	case MethodElicitationCreate:
		return MethodElicitationCreate
	case MethodElicitationComplete:
		return MethodElicitationComplete
	case MethodResourcesTemplatesList:
		return MethodResourcesTemplatesList
	case MethodResourcesSubscribe:
		return MethodResourcesSubscribe
	case MethodResourcesUnsubscribe:
		return MethodResourcesUnsubscribe
	case MethodCompletionComplete:
		return MethodCompletionComplete
	case MethodTasksGet:
		return MethodTasksGet
	case MethodTasksResult:
		return MethodTasksResult
	case MethodTasksCancel:
		return MethodTasksCancel
	case MethodTasksList:
		return MethodTasksList
	case MethodTasksStatus:
		return MethodTasksStatus
	case MethodServerDiscover:
		return MethodServerDiscover
	case MethodSubscriptionsListen:
		return MethodSubscriptionsListen
	case MethodSubscriptionsAcknowledged:
		return MethodSubscriptionsAcknowledged
	}
	return decodeString(quoted)
}
