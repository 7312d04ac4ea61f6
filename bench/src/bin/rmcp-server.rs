//! The rmcp reference: the same `code_review` prompt served natively by an
//! rmcp `ServerHandler`, the way a Rust MCP server is usually written: over
//! rmcp's default `stdio()` transport, or over Streamable HTTP with
//! `--http ADDR` (served by the same HTTP front as prompt-host).

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
    let running = CodeReview.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
