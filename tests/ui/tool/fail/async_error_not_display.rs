use agent_core::tool;

#[derive(Debug)]
pub struct FetchError;

/// Fetch a page.
#[tool]
async fn fetch(url: String) -> Result<String, FetchError> {
    if url.is_empty() {
        return Err(FetchError);
    }
    Ok(url)
}

fn main() {}
