//! What the benchmark's reference servers share: the `code_review` prompt of
//! the MCP specification, answered natively (without WebAssembly), exactly as
//! the bundled `code_review` pack answers it.

/// The reply text for `code`.
pub fn code_review_text(code: &str) -> String {
    format!("Please review this Python code:\n{code}")
}

/// The description of the reply.
pub const CODE_REVIEW_DESCRIPTION: &str = "Code review prompt";
