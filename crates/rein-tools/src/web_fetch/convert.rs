//! What a fetched body becomes for the model: HTML as Markdown (by
//! `htmd`, with scripts, styles and page furniture left out), text and
//! JSON as they are, anything else refused by its type.

use super::get::Page;

/// What kind of body a page has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Html,
    /// Text, JSON, XML, Markdown: passed through.
    Text,
    /// Anything else (the media type, or "unknown").
    Binary(String),
}

/// The kind of `page`'s body, from its media type; a missing type is
/// (or `application/octet-stream`) is judged by the bytes (HTML if it
/// starts like HTML, text if it is UTF-8 without NUL bytes).
pub fn body_kind(page: &Page) -> Body {
    let media = page
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "text/html" | "application/xhtml+xml" => Body::Html,
        m if m.starts_with("text/")
            || m == "application/json"
            || m == "application/xml"
            || m == "application/javascript"
            || m.ends_with("+json")
            || m.ends_with("+xml") =>
        {
            Body::Text
        }
        // No type, or the generic one servers give files they do not
        // know: judged by the bytes.
        "" | "application/octet-stream" => sniff(&page.body),
        m => Body::Binary(m.to_string()),
    }
}

fn sniff(body: &[u8]) -> Body {
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) || std::str::from_utf8(head).is_err() && std::str::from_utf8(body).is_err()
    {
        return Body::Binary("unknown".into());
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Body::Html
    } else {
        Body::Text
    }
}

/// The page as text for the model, or why it is not text.
pub fn to_text(page: &Page) -> Result<String, String> {
    match body_kind(page) {
        Body::Binary(media) => Err(format!(
            "{} is {media} content, not text; web_fetch reads only HTML, text and JSON",
            page.url
        )),
        Body::Text => Ok(String::from_utf8_lossy(&page.body).into_owned()),
        Body::Html => {
            let html = String::from_utf8_lossy(&page.body);
            let converter = htmd::HtmlToMarkdown::builder()
                .skip_tags(vec![
                    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "head",
                    "nav", "footer", "form",
                ])
                .build();
            converter
                .convert(&html)
                .map_err(|e| format!("{} could not be turned into Markdown: {e}", page.url))
        }
    }
}
