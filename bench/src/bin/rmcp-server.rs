//! The rmcp reference: the same `code_review` prompt served natively by an
//! rmcp `ServerHandler`, the way a Rust MCP server is usually written: over
//! rmcp's default `stdio()` transport, or over Streamable HTTP with
//! `--http ADDR` (served by the same HTTP front as prompt-host), or with
//! `--rmcp-http ADDR` on rmcp's own Streamable HTTP server: its
//! `StreamableHttpService` with a `LocalSessionManager` and the default
//! config at `/mcp`, served by hyper's HTTP/1 server, as an rmcp user serves
//! HTTP (rmcp's examples mount the same service in axum, which is not in this
//! workspace; axum adds only its router).

use prompt_host_bench::{CODE_REVIEW_DESCRIPTION, code_review_text};
use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult, InitializeResult, ListPromptsResult, PaginatedRequestParams,
    Prompt, PromptArgument, PromptMessage, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct CodeReview;

impl ServerHandler for CodeReview {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_prompts().build())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = PromptArgument::new("code").with_description("The code to review").with_required(true);
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "code_review",
            Some("Asks the LLM to analyze code quality and suggest improvements"),
            Some(vec![argument]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let code = request.arguments.as_ref().and_then(|args| args.get("code")).and_then(|code| code.as_str());
        let Some(code) = code else {
            return Err(ErrorData::invalid_params("missing required argument: code", None));
        };
        let message = PromptMessage::new_text(Role::User, code_review_text(code));
        Ok(GetPromptResponse::Complete(GetPromptResult::new(vec![message]).with_description(CODE_REVIEW_DESCRIPTION)))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, addr] = args.as_slice()
        && flag == "--http"
    {
        let config = prompt_host::transport::http::HttpConfig::new(addr.parse()?);
        let server = prompt_host::transport::http::serve_http(CodeReview, config).await?;
        server.wait().await;
        return Ok(());
    }
    if let [_, flag, addr] = args.as_slice()
        && flag == "--rmcp-http"
    {
        return serve_rmcp_http(addr.parse()?).await;
    }
    let running = CodeReview.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// rmcp's own Streamable HTTP server at `http://ADDR/mcp`, until killed.
async fn serve_rmcp_http(addr: std::net::SocketAddr) -> anyhow::Result<()> {
    use http_body_util::BodyExt;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

    let service = StreamableHttpService::new(
        || Ok(CodeReview),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        // As prompt-host's front does: small interactive responses, no Nagle delay.
        stream.set_nodelay(true)?;
        let service = service.clone();
        tokio::spawn(async move {
            // What `Router::new().nest_service("/mcp", service)` does in axum:
            // the service at /mcp, 404 elsewhere. `handle` is what the
            // service's tower `call` runs.
            let route = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let service = service.clone();
                async move {
                    if request.uri().path() == "/mcp" {
                        Ok::<_, std::convert::Infallible>(service.handle(request).await)
                    } else {
                        let mut response = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::new()).boxed());
                        *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                        Ok(response)
                    }
                }
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(stream), route).await;
        });
    }
}
