package protocol

// Limits on a callback body. Each is documented in docs/configuration.md; a body beyond
// any of them is refused before anything is looked up or written.
const (
	// MaxBodyBytes bounds the whole callback body.
	MaxBodyBytes = 128 << 10
	// MaxArgumentsBytes bounds the canonical form of function.content.
	MaxArgumentsBytes = 64 << 10
	// MaxDepth bounds the nesting of the whole body; the body itself is
	// level 1 and function.content level 3.
	MaxDepth = 64
	// MaxStringBytes bounds any single string in the body, member names
	// included. Function parameters set tighter limits of their own.
	MaxStringBytes = 32 << 10
	// MaxNumberLength bounds a number literal.
	MaxNumberLength = 40
	// MaxFunctionNameBytes bounds function.name.
	MaxFunctionNameBytes = 64
	// MaxUserIDBytes bounds context.externalUserId.
	MaxUserIDBytes = 256
	// MaxRequestIDBytes bounds context.metadata.request_id.
	MaxRequestIDBytes = 128
	// MaxMetadataEntries bounds the number of context.metadata entries.
	MaxMetadataEntries = 64
	// MaxMetadataValueBytes bounds each context.metadata value.
	MaxMetadataValueBytes = 4 << 10
	// MaxTokenBytes bounds context.conversationToken and context.callSource.
	MaxTokenBytes = 1 << 10
)
