//! Picking the next token: greedy or temperature sampling, with the tool-call
//! grammar checked on the picked token first and applied to the whole
//! vocabulary only when that token breaks it (as llama.cpp's common sampler
//! does; checking 150k candidates on every token would be slow).

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::grammar::ToolGrammar;

/// What the grammar holds an answer to.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallShape {
    /// The answer is calls from its first token.
    pub forced: bool,
    /// At most one call.
    pub single: bool,
}

/// The grammar of one answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Hold<'a> {
    /// None: the model writes freely.
    Free,
    /// Tool calls held well-formed in `shape`.
    Calls(&'a ToolGrammar, CallShape),
    /// A whole grammar applied from the first token (an answer held to a
    /// JSON Schema, or calls).
    Whole(&'a str),
}

/// The sampler of one answer.
pub(crate) struct TokenSampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl TokenSampler {
    /// `hold`: the tool-call grammar, applied once one of its triggers
    /// shows up in the output, or from the first token when the answer
    /// must be a call (`shape.forced`), one call only with `shape.single`;
    /// or a whole grammar from the first token.
    pub(crate) fn new(
        model: &LlamaModel,
        temperature: f32,
        seed: u32,
        hold: Hold<'_>,
    ) -> Result<Self, String> {
        let chain = if temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::min_p(0.05, 1),
                LlamaSampler::temp(temperature),
                LlamaSampler::dist(seed),
            ])
        };
        let grammar = match hold {
            Hold::Free => None,
            Hold::Calls(g, shape) => {
                let text = g.for_shape(shape.forced, shape.single);
                let sampler = if shape.forced {
                    LlamaSampler::grammar(model, &text, "root")
                } else {
                    LlamaSampler::grammar_lazy_patterns(model, &text, "root", &g.triggers, &[])
                };
                Some(sampler.map_err(|e| format!("the tool-call grammar was refused: {e}"))?)
            }
            Hold::Whole(text) => Some(
                LlamaSampler::grammar(model, text, "root")
                    .map_err(|e| format!("the answer's grammar was refused: {e}"))?,
            ),
        };
        Ok(TokenSampler { chain, grammar })
    }

    /// Pick the token following output `idx` of the last decode. An
    /// end-of-generation token is returned without being fed to the
    /// grammar. Err when the grammar allows no token at all.
    pub(crate) fn sample(
        &mut self,
        ctx: &LlamaContext<'_>,
        idx: i32,
        is_eog: impl Fn(LlamaToken) -> bool,
    ) -> Result<LlamaToken, String> {
        let mut candidates = ctx.token_data_array_ith(idx);
        candidates.apply_sampler(&mut self.chain);
        let mut token = candidates
            .selected_token()
            .ok_or_else(|| "the sampler picked no token".to_string())?;
        if let Some(grammar) = &mut self.grammar {
            if !allowed(grammar, token) {
                let mut candidates = ctx.token_data_array_ith(idx);
                candidates.apply_sampler(grammar);
                candidates.apply_sampler(&mut self.chain);
                token = candidates
                    .selected_token()
                    .ok_or_else(|| "the sampler picked no token".to_string())?;
                if !allowed(grammar, token) {
                    return Err("the tool-call grammar allows no next token".to_string());
                }
            }
            if !is_eog(token) {
                grammar
                    .try_accept(token)
                    .map_err(|e| format!("the tool-call grammar refused a token: {e}"))?;
            }
        }
        self.chain.accept(token);
        Ok(token)
    }
}

/// Whether the grammar lets `token` come next.
fn allowed(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data.first().is_some_and(|d| d.logit().is_finite())
}
