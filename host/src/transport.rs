//! Transports: how MCP messages reach the handler. stdio is the default;
//! [`http`] serves Streamable HTTP.

pub mod http;

use rmcp::ServiceExt;

use crate::handler::PromptServer;

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session ended abnormally: {0}")]
    Run(String),
}

/// Serves MCP over this process's stdin and stdout until the client closes
/// stdin. Only protocol messages are written to stdout.
pub async fn serve_stdio(server: PromptServer) -> Result<(), TransportError> {
    let running = server
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(|error| TransportError::Start(error.to_string()))?;
    let reason = running.waiting().await.map_err(|error| TransportError::Run(error.to_string()))?;
    tracing::info!(?reason, "stdio session ended");
    Ok(())
}
