//! `rudder embed`: embed texts, print dimensions and pairwise cosine similarities.

use std::process::ExitCode;

use clap::Args;
use rudder::embed::{cosine, Embedder, FastEmbedder};
use rudder::models::ModelStore;

use super::Ctx;

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Texts to embed.
    #[arg(required = true)]
    texts: Vec<String>,
}

pub fn run(ctx: &Ctx, args: EmbedArgs) -> anyhow::Result<ExitCode> {
    let store = ModelStore::open(&ctx.paths)?;
    let name = ctx.model.as_deref().unwrap_or(&ctx.settings.embed_model);
    let embedder = FastEmbedder::from_store(&store, name, ctx.settings.llama.effective_threads())?;
    let texts: Vec<&str> = args.texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&texts)?;
    let n = texts.len();
    let mut matrix = vec![vec![0f32; n]; n];
    for i in 0..n {
        for j in 0..n {
            matrix[i][j] = cosine(&vectors[i], &vectors[j]);
        }
    }
    if ctx.json {
        println!(
            "{}",
            serde_json::json!({"model": name, "dimensions": embedder.dimensions(), "texts": texts, "cosine": matrix})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("model: {name}   dimensions: {}", embedder.dimensions());
    for (i, t) in texts.iter().enumerate() {
        println!("[{i}] {t}");
    }
    print!("{:>6}", "");
    for j in 0..n {
        print!("{:>8}", format!("[{j}]"));
    }
    println!();
    for (i, row) in matrix.iter().enumerate() {
        print!("{:>6}", format!("[{i}]"));
        for v in row {
            print!("{v:>8.3}");
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
