//! ignite: declarative contract graphs with typed tools and LLM agents.

pub mod ast;
pub mod diagnostic;
pub mod eval;
pub mod ir;
pub mod llm;
pub mod source;
pub mod syntax;
pub mod tools;
pub mod trace;
