// Package hippocam is the domain every other package speaks: messages and their kinds, intents
// and the intent stack, sessions and the changes a step makes to them, the Store, Model and
// Tokenizer interfaces, usage and prices, the search syntax, and the nouns of learning across
// tasks (clusters, trajectories, the MemorySystem interface and its optional parts).
//
// The Hippocam paper's algorithms run in package engine; the proxy's session service is package
// sessions; the transports are httpapi (with the formats of openai/wire and anthropic) and mcp;
// the memory systems are under memory/, registered in memory/library; the stores are sqlite,
// postgres and inmem. README.md maps every package.
package hippocam
