//! Images an MCP tool returned, shown to a model that takes images. A tool message carries text
//! only, so the images follow the step's tool results as one user message naming the call they came
//! from; models without images read the text notes the result already has.

use promptgate_llm::{ChatMessage, ContentPart, ImageUrl, UserContent};
use serde_json::Value;

/// At most this many images a step, so a tool cannot fill the context with pictures.
const MAX_IMAGES_PER_STEP: usize = 4;
/// Larger images (in base64 characters, about 3.75 MB decoded) are left to their text note.
const MAX_IMAGE_BASE64: usize = 5_000_000;
/// The types every provider that takes images accepts.
const TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The images of one MCP result as the UI received it (`content` blocks of type `image`), as data
/// URLs, at most `room` of them.
pub(crate) fn images_of(output: &Value, room: usize) -> Vec<String> {
    let Some(blocks) = output.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|block| {
            let mime = block.get("mimeType").and_then(Value::as_str)?;
            let data = block.get("data").and_then(Value::as_str)?;
            let usable = TYPES.contains(&mime)
                && data.len() <= MAX_IMAGE_BASE64
                && data
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
            usable.then(|| format!("data:{mime};base64,{data}"))
        })
        .take(room)
        .collect()
}

/// Collects a step's images, call by call, within the per-step bound.
#[derive(Default)]
pub(crate) struct StepImages {
    by_call: Vec<(String, Vec<String>)>,
    count: usize,
}

impl StepImages {
    pub fn add(&mut self, call_id: &str, output: &Value) {
        let found = images_of(output, MAX_IMAGES_PER_STEP - self.count);
        if !found.is_empty() {
            self.count += found.len();
            self.by_call.push((call_id.to_owned(), found));
        }
    }

    /// The user message that shows them, after the step's tool results; `None` without images.
    pub fn message(self) -> Option<ChatMessage> {
        if self.by_call.is_empty() {
            return None;
        }
        let mut parts = Vec::with_capacity(self.count + self.by_call.len());
        for (call_id, urls) in self.by_call {
            parts.push(ContentPart::Text {
                text: format!("The images the tool call {call_id} returned:"),
            });
            parts.extend(urls.into_iter().map(|url| ContentPart::ImageUrl {
                image_url: ImageUrl { url },
            }));
        }
        Some(ChatMessage::User {
            content: UserContent::Parts(parts),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_bounded_images_of_known_types_are_taken() {
        let output = json!({"content": [
            {"type": "text", "text": "a chart"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
            {"type": "image", "mimeType": "image/jpeg", "data": "not base64!"},
            {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
        ]});
        assert_eq!(images_of(&output, 4), ["data:image/png;base64,iVBORw0KGgo="]);
        assert!(images_of(&output, 0).is_empty());
        assert!(images_of(&json!({"truncated": true}), 4).is_empty());
    }

    #[test]
    fn a_step_shows_at_most_four_images_after_naming_their_call() {
        let image = json!({"type": "image", "mimeType": "image/png", "data": "AAAA"});
        let mut step = StepImages::default();
        step.add(
            "c1",
            &json!({"content": [image.clone(), image.clone(), image.clone()]}),
        );
        step.add("c2", &json!({"content": [image.clone(), image.clone()]}));
        step.add("c3", &json!({"content": [image]}));
        let Some(ChatMessage::User {
            content: UserContent::Parts(parts),
        }) = step.message()
        else {
            panic!("a user message with parts");
        };
        let images = parts
            .iter()
            .filter(|p| matches!(p, ContentPart::ImageUrl { .. }))
            .count();
        assert_eq!(images, 4);
        assert_eq!(
            parts[4],
            ContentPart::Text {
                text: "The images the tool call c2 returned:".into()
            }
        );
        assert!(StepImages::default().message().is_none());
    }
}
