//! Tests of the `llm` module: wire formats (snapshots), the tool-use loop,
//! reliability and record/replay, against local fake servers only.

// Test helpers outside `#[test]` fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod anthropic;
mod fixtures;
mod gemini;
mod http;
mod ollama;
mod openai;
mod replay;
mod script;
mod structured;
mod wire;
