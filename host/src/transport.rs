//! Transports: how MCP messages reach the handler. [`stdio`] is the default;
//! [`http`] serves Streamable HTTP.

pub mod http;
pub mod stdio;

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session ended abnormally: {0}")]
    Run(String),
}
