//! `pengine generate`: the man pages and shell completions of the command line, rendered from
//! its own clap definition (the Debian package build runs it; hidden from `--help`).

use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// What to write, and where.
#[derive(clap::Args)]
pub struct GenerateArgs {
    /// `man` (pengine.1 and one page per subcommand) or `completions` (bash, zsh, fish).
    #[arg(value_enum)]
    what: What,
    /// The directory to write into (created when missing).
    #[arg(long = "out", value_name = "DIR")]
    out: PathBuf,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum What {
    Man,
    Completions,
}

/// Writes the files; returns the error naming the file that could not be written.
pub fn run<C: CommandFactory>(args: GenerateArgs) -> Result<(), String> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let cmd = C::command();
    match args.what {
        What::Man => man_pages(&cmd, &args.out),
        What::Completions => completions(cmd, &args.out),
    }
}

fn man_pages(cmd: &clap::Command, out: &Path) -> Result<(), String> {
    write_page(cmd.clone(), &out.join("pengine.1"))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("pengine-{}", sub.get_name());
        let page = sub.clone().name(name.clone());
        write_page(page, &out.join(format!("{name}.1")))?;
    }
    Ok(())
}

fn write_page(cmd: clap::Command, path: &Path) -> Result<(), String> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut buf)
        .map_err(|e| format!("cannot render {}: {e}", path.display()))?;
    std::fs::write(path, buf).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn completions(mut cmd: clap::Command, out: &Path) -> Result<(), String> {
    use clap_complete::Shell;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd, "pengine", out).map_err(|e| {
            format!(
                "cannot write the {shell} completion into {}: {e}",
                out.display()
            )
        })?;
    }
    Ok(())
}
