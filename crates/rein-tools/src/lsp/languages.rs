//! Which language server serves a file: the user's `[lsp.NAME]` entries
//! first, then the built-in table of [`DEFAULTS`], whose first program
//! found on `PATH` is used.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// How to run one server, and which files it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The entry's name (`python`, or the user's `[lsp.NAME]`).
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// File extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// Sent in the handshake.
    pub init_options: Option<Value>,
    /// The `languageId` of its documents.
    pub language_id: String,
    /// Files whose folder is a project's root (see [`super::roots`]).
    pub root_markers: Vec<String>,
}

/// A built-in entry: a name, the commands tried in order, extensions,
/// the language id.
struct Default {
    name: &'static str,
    commands: &'static [&'static [&'static str]],
    extensions: &'static [&'static str],
    language_id: &'static str,
    markers: &'static [&'static str],
}

/// The servers rein looks for on `PATH`.
const DEFAULTS: &[Default] = &[
    Default {
        name: "python",
        commands: &[
            &["basedpyright-langserver", "--stdio"],
            &["pyright-langserver", "--stdio"],
            &["pylsp"],
        ],
        extensions: &["py", "pyi"],
        language_id: "python",
        markers: &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
            "pyrightconfig.json",
        ],
    },
    Default {
        name: "typescript",
        commands: &[&["typescript-language-server", "--stdio"]],
        extensions: &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
        language_id: "typescript",
        markers: &["package.json", "tsconfig.json", "jsconfig.json"],
    },
    Default {
        name: "rust",
        commands: &[&["rust-analyzer"]],
        extensions: &["rs"],
        language_id: "rust",
        markers: &["Cargo.toml"],
    },
    Default {
        name: "go",
        commands: &[&["gopls"]],
        extensions: &["go"],
        language_id: "go",
        markers: &["go.mod", "go.work"],
    },
    Default {
        name: "c",
        commands: &[&["clangd"]],
        extensions: &["c", "h", "cc", "cpp", "cxx", "hpp"],
        language_id: "cpp",
        markers: &[
            "compile_commands.json",
            "CMakeLists.txt",
            "compile_flags.txt",
        ],
    },
];

/// What rust-analyzer gets: nothing of the project is built or run
/// (build scripts, procedural macros and `cargo check` run code).
fn init_options(name: &str) -> Option<Value> {
    (name == "rust").then(|| {
        json!({
            "cargo": {"buildScripts": {"enable": false}},
            "procMacro": {"enable": false},
            "checkOnSave": false
        })
    })
}

/// The server for a file with extension `ext`: a configured entry that
/// names it, else the first built-in one whose program is on `PATH`.
pub fn server_for(ext: &str, configured: &[ServerSpec]) -> Option<ServerSpec> {
    if let Some(s) = configured
        .iter()
        .find(|s| s.extensions.iter().any(|e| e == ext))
    {
        return Some(s.clone());
    }
    let d = DEFAULTS.iter().find(|d| d.extensions.contains(&ext))?;
    let command = d.commands.iter().find(|c| find_program(c[0]).is_some())?;
    Some(ServerSpec {
        name: d.name.to_string(),
        command: command.iter().map(|w| w.to_string()).collect(),
        extensions: d.extensions.iter().map(|e| e.to_string()).collect(),
        init_options: init_options(d.name),
        language_id: language_id(d.language_id, ext),
        root_markers: strings(d.markers),
    })
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The root markers of the built-in language that serves one of
/// `extensions` (a user's entry without `root_markers` gets them).
pub fn default_markers(extensions: &[String]) -> Vec<String> {
    DEFAULTS
        .iter()
        .find(|d| {
            extensions
                .iter()
                .any(|e| d.extensions.contains(&e.as_str()))
        })
        .map(|d| strings(d.markers))
        .unwrap_or_default()
}

/// A server rein would use in this workspace, before it is started.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    pub name: String,
    /// The program found on `PATH`, or the one looked for when none was.
    pub program: String,
    /// Whether `program` was found.
    pub found: bool,
}

/// The user's entries, then each built-in language no entry covers: the
/// first of its programs on `PATH`, else the first it looks for.
pub fn known(configured: &[ServerSpec]) -> Vec<Known> {
    let mut out: Vec<Known> = configured
        .iter()
        .map(|s| Known {
            name: s.name.clone(),
            program: s.command[0].clone(),
            found: find_program(&s.command[0]).is_some(),
        })
        .collect();
    for d in DEFAULTS {
        let covered = configured.iter().any(|s| {
            s.name == d.name
                || s.extensions
                    .iter()
                    .any(|e| d.extensions.contains(&e.as_str()))
        });
        if covered {
            continue;
        }
        let found = d.commands.iter().find(|c| find_program(c[0]).is_some());
        out.push(Known {
            name: d.name.to_string(),
            program: found.unwrap_or(&d.commands[0])[0].to_string(),
            found: found.is_some(),
        });
    }
    out
}

/// The `languageId` of a file: TypeScript's and C's family by extension.
fn language_id(base: &str, ext: &str) -> String {
    match ext {
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        _ => base,
    }
    .to_string()
}

/// `name` as a program: an absolute path that exists, or the first
/// executable of that name on `PATH` (absolute folders only).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        let runnable = std::fs::metadata(path).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        });
        return runnable.then(|| path.to_path_buf());
    }
    if name.contains('/') {
        return None;
    }
    crate::sandbox::find_on_path(name)
}

/// The folder a server's program needs to read besides the system's: its
/// `node_modules` when it is an npm package, else its own folder.
pub fn installation(program: &Path) -> PathBuf {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    real.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .or_else(|| real.parent())
        .unwrap_or(&real)
        .to_path_buf()
}

/// What a server is told in its handshake: its entry's options, or for
/// typescript-language-server without any, the `tsserver` installed
/// beside it (it finds none by itself outside a project that has one).
pub fn handshake_options(spec: &ServerSpec, program: &Path) -> Option<Value> {
    if spec.init_options.is_some() {
        return spec.init_options.clone();
    }
    let named = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n == "typescript-language-server")
    };
    if !named(program) && !spec.command.first().is_some_and(|c| named(Path::new(c))) {
        return None;
    }
    let tsserver = installation(program).join("typescript/lib/tsserver.js");
    tsserver
        .is_file()
        .then(|| json!({"tsserver": {"path": tsserver}}))
}
