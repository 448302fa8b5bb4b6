//! A request as the model's tokens: the chat template rendered, the BOS
//! token added when the model wants one. The worker evaluates these
//! tokens; the provider counts them, so the size rein shows for a request
//! (`/context`) is the size the model reads.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use rein_core::ModelRequest;

use super::template::ChatTemplate;

/// Turns requests into prompts and tokens for one loaded model.
pub(crate) struct Prompter {
    template: ChatTemplate,
    /// Text of the BOS token, when the model wants one.
    bos_text: String,
    /// Tool results sent as user messages (see `LocalConfig`).
    tool_results_as_user: bool,
}

impl std::fmt::Debug for Prompter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompter")
            .field("tool_results_as_user", &self.tool_results_as_user)
            .finish_non_exhaustive()
    }
}

impl Prompter {
    pub(crate) fn new(
        template: ChatTemplate,
        bos_text: String,
        tool_results_as_user: bool,
    ) -> Self {
        Prompter {
            template,
            bos_text,
            tool_results_as_user,
        }
    }

    /// The prompt text of `request` and its tokens with `model`'s
    /// vocabulary; `Err` when the template cannot render it.
    pub(crate) fn tokens(
        &self,
        model: &LlamaModel,
        request: &ModelRequest,
    ) -> Result<(String, Vec<LlamaToken>), String> {
        let prompt = self.template.render(request, self.tool_results_as_user)?;
        let add_bos = !self.bos_text.is_empty() && !prompt.starts_with(&self.bos_text);
        let tokens = model.vocab().tokenize(prompt.as_bytes(), add_bos, true);
        Ok((prompt, tokens))
    }
}
