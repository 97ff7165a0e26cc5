//! `rudder ask`: one question to the chat model, streamed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rudder::llm::{
    self, CancelToken, FinishReason, GenerationOptions, Message, OutputFormat, Request,
};
use rudder::models::ModelStore;

use super::Ctx;

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question.
    prompt: String,
    /// A JSON schema file: the answer is JSON valid under it. Arrays and strings without a
    /// bound get one (8 items, 160 characters), so the answer always closes.
    #[arg(long, value_name = "FILE.json")]
    schema: Option<PathBuf>,
    /// Most tokens to generate [default: 512; with --schema, what the longest answer the
    /// bounded schema allows needs, at most 4096, its bounds halved to fit a lower limit].
    #[arg(long)]
    max_tokens: Option<u32>,
    /// 0 = greedy.
    #[arg(long, default_value_t = 0.7)]
    temperature: f32,
    #[arg(long, default_value_t = 42)]
    seed: u32,
}

/// Tokens for a plain answer unless `--max-tokens` says otherwise.
const TEXT_TOKENS: u32 = 512;
/// The most tokens a structured answer gets unless `--max-tokens` says otherwise.
const MAX_SCHEMA_TOKENS: u32 = 4096;

pub fn run(ctx: &Ctx, args: AskArgs) -> anyhow::Result<ExitCode> {
    let (format, max_tokens) = match &args.schema {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading schema {}", path.display()))?;
            let schema: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not valid JSON", path.display()))?;
            // The answer must close within its budget: bound the schema, size the budget from
            // the bounds, and halve the bounds when a lower limit was asked for.
            let max_tokens = args.max_tokens.unwrap_or_else(|| {
                llm::bounds::worst_case_chars(&llm::bounds::bound(&schema))
                    .map_or(MAX_SCHEMA_TOKENS, |c| {
                        u32::try_from(c).unwrap_or(u32::MAX).min(MAX_SCHEMA_TOKENS)
                    })
            });
            let fitted = llm::bounds::fit(&schema, max_tokens)
                .with_context(|| format!("schema {}", path.display()))?;
            (OutputFormat::JsonSchema(fitted), max_tokens)
        }
        None => (OutputFormat::Text, args.max_tokens.unwrap_or(TEXT_TOKENS)),
    };
    let json_mode = matches!(format, OutputFormat::JsonSchema(_));
    let store = ModelStore::open(&ctx.paths)?;
    let llm = llm::open_chat(&store, &ctx.settings, ctx.model.as_deref())?;
    let system = rudder::prompts::render("ask_system", minijinja::context! { json => json_mode })?;
    let mut request = Request {
        messages: vec![Message::system(system), Message::user(args.prompt)],
        options: GenerationOptions {
            max_tokens,
            temperature: args.temperature,
            seed: args.seed,
            ..Default::default()
        },
        format,
    };
    // Stream plain answers to the terminal; structured and --json output is printed whole.
    let stream = !json_mode && !ctx.json;
    // Ctrl-C stops generation cleanly: the partial answer is kept and the exit code says so.
    let cancel = CancelToken::new();
    let on_interrupt = cancel.clone();
    ctrlc::set_handler(move || on_interrupt.cancel()).context("installing the Ctrl-C handler")?;
    let mut stdout = std::io::stdout();
    // A structured answer cut at the limit despite the bounds (a character can take several
    // tokens) is asked once more with the bounds halved; cut again, it is a clear error.
    let mut attempt = 0;
    let completion = loop {
        let completion = llm.complete(
            &request,
            &mut |piece| {
                if stream {
                    let _ = stdout.write_all(piece.as_bytes());
                    let _ = stdout.flush();
                }
            },
            &cancel,
        )?;
        let cut = json_mode
            && completion.finish == FinishReason::Length
            && serde_json::from_str::<serde_json::Value>(completion.text.trim()).is_err();
        if !cut {
            break completion;
        }
        attempt += 1;
        let tighter = match &mut request.format {
            OutputFormat::JsonSchema(schema) => llm::bounds::halve(schema),
            _ => false,
        };
        if attempt > 1 || !tighter {
            return Err(llm::LlmError::Cut {
                max_tokens,
                output: completion.text.chars().take(500).collect(),
            }
            .into());
        }
        tracing::warn!("the answer reached {max_tokens} tokens before its JSON closed; asking again with the schema's bounds halved");
    };
    if completion.finish == FinishReason::Cancelled {
        if stream {
            println!();
        }
        eprintln!(
            "[interrupted after {} generated tokens]",
            completion.usage.generated_tokens
        );
        return Ok(ExitCode::from(130));
    }
    if json_mode {
        let value: serde_json::Value = serde_json::from_str(completion.text.trim())
            .with_context(|| format!("the model's output is not JSON: {}", completion.text))?;
        if ctx.json {
            println!(
                "{}",
                serde_json::json!({"model": llm.model_name(), "answer": value, "usage": completion.usage, "finish": completion.finish})
            );
        } else {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
    } else if ctx.json {
        println!(
            "{}",
            serde_json::json!({"model": llm.model_name(), "answer": completion.text, "usage": completion.usage, "finish": completion.finish, "timing": completion.timing})
        );
    } else {
        println!();
        eprintln!(
            "[{}: {} prompt tokens ({} cached), {} generated, {:.1}s]",
            llm.model_name(),
            completion.usage.prompt_tokens,
            completion.usage.cached_tokens,
            completion.usage.generated_tokens,
            completion.timing.total.as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
