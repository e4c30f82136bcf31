//! What `src/` defines, read from its text without a compiler, for the docs tests to resolve the
//! names the prose mentions: every module (a file, a folder's `mod.rs`, an inline `mod NAME {`),
//! the items defined in each (`fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`,
//! `union`, `macro_rules!`) and the names it re-exports (`pub use`), and every type's members:
//! the `fn`s, `const`s and `type`s of its `impl` and `trait` blocks, an enum's variants, a
//! struct's named fields. Strings, characters and comments are blanked first, so a brace or a
//! keyword inside them counts for nothing. Members are gathered by type name over the whole tree
//! (two types of one name share them): enough to tell a name that is gone from one that is there.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// What the tree defines.
#[derive(Debug, Default)]
pub struct Index {
    /// Module path (`engine::lane`, `""` for the crate root) -> the names defined or re-exported
    /// in it.
    modules: BTreeMap<String, BTreeSet<String>>,
    /// Type name -> its members, over every type of that name.
    members: BTreeMap<String, BTreeSet<String>>,
    /// Names defined as a struct, enum, trait, type alias or union, anywhere.
    types: BTreeSet<String>,
    /// Names of enum variants, anywhere.
    variants: BTreeSet<String>,
    /// Names of functions, anywhere (free, or in an `impl` or `trait`).
    functions: BTreeSet<String>,
}

impl Index {
    /// The index of every `.rs` file under `dir` (`src/`, or `tests/it/` as a crate of its own).
    pub fn of_tree(dir: &Path) -> Result<Index, String> {
        let mut files = Vec::new();
        super::rust_files(dir, "", &mut files)?;
        let mut index = Index::default();
        for file in files {
            let path = dir.join(&file);
            let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            index.add_file(&module_of(&file), &text);
        }
        Ok(index)
    }

    /// The index of hand-made sources: (module path, text) pairs.
    pub fn of_sources(sources: &[(&str, &str)]) -> Index {
        let mut index = Index::default();
        for (module, text) in sources {
            index.add_file(module, text);
        }
        index
    }

    /// Every module whose path ends with `segments` (whole segments), e.g. `["protocol"]` finds
    /// `worker::protocol`.
    pub fn modules_ending_with(&self, segments: &[&str]) -> Vec<&str> {
        self.modules
            .keys()
            .filter(|path| {
                let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
                parts.ends_with(segments)
            })
            .map(String::as_str)
            .collect()
    }

    /// Whether `module` defines or re-exports `name`.
    pub fn defines(&self, module: &str, name: &str) -> bool {
        self.modules
            .get(module)
            .is_some_and(|names| names.contains(name))
    }

    /// Whether `module` or a module below it defines or re-exports `name`.
    pub fn defines_under(&self, module: &str, name: &str) -> bool {
        let below = format!("{module}::");
        self.modules
            .iter()
            .filter(|(path, _)| *path == module || path.starts_with(&below))
            .any(|(_, names)| names.contains(name))
    }

    pub fn is_type(&self, name: &str) -> bool {
        self.types.contains(name)
    }

    pub fn is_variant(&self, name: &str) -> bool {
        self.variants.contains(name)
    }

    pub fn is_function(&self, name: &str) -> bool {
        self.functions.contains(name)
    }

    /// Whether a type named `owner` has a function, constant, associated type, variant or named
    /// field called `member`.
    pub fn has_member(&self, owner: &str, member: &str) -> bool {
        self.members
            .get(owner)
            .is_some_and(|members| members.contains(member))
    }

    fn add_file(&mut self, module: &str, text: &str) {
        let tokens = tokens(&blank(text));
        self.modules.entry(module.to_owned()).or_default();
        // The inline modules open at each depth: (path, the depth of its `{`).
        let mut open: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < tokens.len() {
            let current = open
                .last()
                .map_or(module, |(path, _)| path.as_str())
                .to_owned();
            let after_item = i == 0 || matches!(tokens[i - 1].as_str(), "}" | ";" | "{" | "]");
            match tokens[i].as_str() {
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if open.last().is_some_and(|(_, at)| *at == depth) {
                        open.pop();
                    }
                }
                "use" if (i > 0 && tokens[i - 1] == "pub") || is_pub_restricted(&tokens, i) => {
                    let end = find(&tokens, i, ";").unwrap_or(tokens.len());
                    let names = tokens[i + 1..end].iter().filter(|t| {
                        is_ident(t) && !matches!(t.as_str(), "self" | "crate" | "super" | "as")
                    });
                    self.modules
                        .entry(current)
                        .or_default()
                        .extend(names.cloned());
                }
                "impl" if after_item || tokens[i - 1] == "unsafe" => {
                    if let Some((owner, open_at)) = impl_owner(&tokens, i) {
                        let body = &tokens[open_at + 1..matching(&tokens, open_at)];
                        self.functions.extend(functions_of(body));
                        self.members
                            .entry(owner)
                            .or_default()
                            .extend(members_of(body));
                    }
                }
                "mod" if tokens.get(i + 2).is_some_and(|t| t == "{") => {
                    let name = &tokens[i + 1];
                    let path = if current.is_empty() {
                        name.clone()
                    } else {
                        format!("{current}::{name}")
                    };
                    self.modules
                        .entry(current)
                        .or_default()
                        .insert(name.clone());
                    self.modules.entry(path.clone()).or_default();
                    open.push((path, depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
                "macro_rules" if tokens.get(i + 1).is_some_and(|t| t == "!") => {
                    if let Some(name) = tokens.get(i + 2).filter(|t| is_ident(t)) {
                        self.modules
                            .entry(current)
                            .or_default()
                            .insert(name.clone());
                    }
                }
                keyword => self.add_item(&current, keyword, &tokens, i),
            }
            i += 1;
        }
    }

    /// The item `tokens[at]` starts, if it is one (`fn NAME`, `struct NAME`, ...), in `module`.
    fn add_item(&mut self, module: &str, keyword: &str, tokens: &[String], at: usize) {
        let kinds = [
            "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
        ];
        if !kinds.contains(&keyword) {
            return;
        }
        let Some(name) = tokens.get(at + 1).filter(|t| is_ident(t) && !is_keyword(t)) else {
            return;
        };
        self.modules
            .entry(module.to_owned())
            .or_default()
            .insert(name.clone());
        let body =
            || body_start(tokens, at + 2).map(|open| &tokens[open + 1..matching(tokens, open)]);
        match keyword {
            "fn" => {
                self.functions.insert(name.clone());
            }
            "struct" | "union" => {
                self.types.insert(name.clone());
                let fields = body().map(fields_of).unwrap_or_default();
                self.members.entry(name.clone()).or_default().extend(fields);
            }
            "enum" => {
                self.types.insert(name.clone());
                let variants = body().map(variants_of).unwrap_or_default();
                self.variants.extend(variants.iter().cloned());
                self.members
                    .entry(name.clone())
                    .or_default()
                    .extend(variants);
            }
            "trait" => {
                self.types.insert(name.clone());
                if let Some(body) = body() {
                    self.functions.extend(functions_of(body));
                    self.members
                        .entry(name.clone())
                        .or_default()
                        .extend(members_of(body));
                }
            }
            "type" => {
                self.types.insert(name.clone());
            }
            _ => {}
        }
    }
}

/// `src/engine/lane/mod.rs` -> `engine::lane`; `src/lib.rs` and `src/main.rs` -> the root.
fn module_of(file: &str) -> String {
    let path = file.strip_suffix(".rs").unwrap_or(file);
    let path = path
        .strip_suffix("/mod")
        .unwrap_or(path)
        .trim_start_matches("./");
    if path == "lib" || path == "main" {
        String::new()
    } else {
        path.replace('/', "::")
    }
}

/// `pub(crate) use`, `pub(super) use`, `pub(in path) use` at `tokens[at]`.
fn is_pub_restricted(tokens: &[String], at: usize) -> bool {
    tokens[at] == "use"
        && at >= 2
        && tokens[at - 1] == ")"
        && tokens[..at - 1]
            .iter()
            .rposition(|t| t == "(")
            .is_some_and(|open| open >= 1 && tokens[open - 1] == "pub")
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && token.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn is_keyword(token: &str) -> bool {
    matches!(
        token,
        "fn" | "struct"
            | "enum"
            | "trait"
            | "type"
            | "const"
            | "static"
            | "mod"
            | "union"
            | "impl"
            | "unsafe"
            | "async"
            | "extern"
            | "pub"
            | "mut"
            | "where"
            | "for"
            | "dyn"
            | "_"
    )
}

fn find(tokens: &[String], from: usize, wanted: &str) -> Option<usize> {
    tokens[from..]
        .iter()
        .position(|t| t == wanted)
        .map(|at| at + from)
}

/// The index of the bracket closing the one at `open` (`{`, `(` or `[`), or the end.
fn matching(tokens: &[String], open: usize) -> usize {
    let mut depth = 0usize;
    for (at, token) in tokens.iter().enumerate().skip(open) {
        match token.as_str() {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// Where the `{` body of an item starts, from just after its name: `None` for a tuple or unit
/// struct (a `(` or `;` first, outside its generics).
fn body_start(tokens: &[String], from: usize) -> Option<usize> {
    let mut angles = 0usize;
    for (at, token) in tokens.iter().enumerate().skip(from) {
        match token.as_str() {
            "<" => angles += 1,
            ">" => angles = angles.saturating_sub(1),
            "{" if angles == 0 => return Some(at),
            "(" | ";" if angles == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The type an `impl` at `tokens[at]` is for, and where its body opens: the last identifier of
/// the self type (after `for` when it implements a trait), outside generics, before `where`.
fn impl_owner(tokens: &[String], at: usize) -> Option<(String, usize)> {
    let mut angles = 0usize;
    let mut owner: Option<String> = None;
    let mut in_where = false;
    for (index, token) in tokens.iter().enumerate().skip(at + 1) {
        match token.as_str() {
            "<" => angles += 1,
            ">" => angles = angles.saturating_sub(1),
            "{" if angles == 0 => return owner.map(|owner| (owner, index)),
            ";" => return None,
            "for" if angles == 0 => owner = None,
            "where" if angles == 0 => in_where = true,
            name if angles == 0 && !in_where && is_ident(name) && !is_keyword(name) => {
                owner = Some(name.to_owned());
            }
            _ => {}
        }
    }
    None
}

/// The names a block's `fn`, `const` and `type` items define.
fn members_of(body: &[String]) -> Vec<String> {
    body.windows(2)
        .filter(|pair| matches!(pair[0].as_str(), "fn" | "const" | "type"))
        .filter(|pair| is_ident(&pair[1]) && !is_keyword(&pair[1]))
        .map(|pair| pair[1].clone())
        .collect()
}

fn functions_of(body: &[String]) -> Vec<String> {
    body.windows(2)
        .filter(|pair| pair[0] == "fn" && is_ident(&pair[1]))
        .map(|pair| pair[1].clone())
        .collect()
}

/// An enum body's variants: the identifier that starts each entry at its top level, attributes
/// skipped.
fn variants_of(body: &[String]) -> Vec<String> {
    let mut variants = Vec::new();
    let mut depth = 0usize;
    let mut expecting = true;
    let mut i = 0;
    while i < body.len() {
        let token = body[i].as_str();
        match token {
            "#" if depth == 0 && expecting && body.get(i + 1).is_some_and(|t| t == "[") => {
                i = matching(body, i + 1);
            }
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => depth = depth.saturating_sub(1),
            "," if depth == 0 => expecting = true,
            name if depth == 0 && expecting && is_ident(name) => {
                variants.push(name.to_owned());
                expecting = false;
            }
            _ => {}
        }
        i += 1;
    }
    variants
}

/// A struct body's named fields: an identifier at its top level followed by a single `:`.
fn fields_of(body: &[String]) -> Vec<String> {
    let mut fields = Vec::new();
    let mut depth = 0usize;
    for (at, token) in body.iter().enumerate() {
        match token.as_str() {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => depth = depth.saturating_sub(1),
            name if depth == 0
                && is_ident(name)
                && !is_keyword(name)
                && body.get(at + 1).is_some_and(|t| t == ":") =>
            {
                fields.push(name.to_owned());
            }
            _ => {}
        }
    }
    fields
}

/// The tokens of blanked Rust: identifiers (and numbers), `::`, `->`, `=>`, and single
/// punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else {
            let pair: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if matches!(pair.as_str(), "::" | "->" | "=>") {
                tokens.push(pair);
                i += 2;
            } else {
                tokens.push(c.to_string());
                i += 1;
            }
        }
    }
    tokens
}

/// Where the raw string (`r"..."`, `r#"..."#`, `br"..."`) starting at `chars[at]` ends (just
/// after it), if one starts there.
fn raw_string_end(chars: &[char], at: usize) -> Option<usize> {
    let start = if chars[at] == 'b' { at + 2 } else { at + 1 };
    let mut quote = start;
    while quote < chars.len() && chars[quote] == '#' {
        quote += 1;
    }
    if chars.get(quote) != Some(&'"') {
        return None;
    }
    let closing: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', quote - start))
        .collect();
    let mut end = quote + 1;
    while end < chars.len() && !chars[end..].starts_with(&closing) {
        end += 1;
    }
    Some((end + closing.len()).min(chars.len()))
}

/// Where the string starting with the `"` at `chars[at]` ends (just after its closing `"`).
fn string_end(chars: &[char], at: usize) -> usize {
    let mut end = at + 1;
    while end < chars.len() {
        match chars[end] {
            '\\' => end += 2,
            '"' => return end + 1,
            _ => end += 1,
        }
    }
    chars.len()
}

/// Rust source with the contents of comments, strings (raw and byte ones too) and character
/// literals replaced by spaces, newlines kept; lifetimes are left alone.
pub fn blank(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let mut out = String::with_capacity(text.len());
    let keep = |c: char| if c == '\n' { '\n' } else { ' ' };
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < n {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < n && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < n {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(chars[i]));
                    i += 1;
                }
            }
            continue;
        }
        let after_ident = i > 0 && is_ident(chars[i - 1]);
        let literal_end = if !after_ident && (c == 'r' || (c == 'b' && next == Some('r'))) {
            raw_string_end(&chars, i)
        } else if c == '"' {
            Some(string_end(&chars, i))
        } else {
            None
        };
        if let Some(end) = literal_end {
            out.extend(chars[i..end].iter().map(|&c| keep(c)));
            i = end;
            continue;
        }
        if c == '\'' {
            if next == Some('\\') {
                let mut end = i + 2;
                while end < n && chars[end] != '\'' {
                    end += 1;
                }
                let end = (end + 1).min(n);
                out.extend(chars[i..end].iter().map(|&c| keep(c)));
                i = end;
                continue;
            }
            if chars.get(i + 2) == Some(&'\'') {
                out.push_str("   ");
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

#[test]
fn strings_comments_and_characters_are_blanked_and_lifetimes_kept() {
    let code = "fn a<'x>(s: &'x str) { let b = \"fn gone() {\"; let c = '{'; let d = '\\''; }\n\
                // struct Gone;\n/* enum Gone { /* nested */ A } */ let r = r#\"trait Gone {\"#;";
    let blanked = blank(code);
    assert_eq!(blanked.chars().count(), code.chars().count());
    for gone in ["gone", "Gone", "'{'"] {
        assert!(!blanked.contains(gone), "{gone} in {blanked}");
    }
    assert!(blanked.contains("fn a<'x>(s: &'x str)"), "{blanked}");
    assert_eq!(blanked.matches('{').count(), 1, "{blanked}");
}

#[test]
fn items_members_variants_fields_and_inline_modules_are_indexed() {
    let index = Index::of_sources(&[
        (
            "engine::lane",
            "pub struct Lane { pub slots: Vec<Slot>, map: HashMap<String, u32> }\n\
             impl<'a> Lane { pub fn command(&self) -> String { format!(\"{}\", 1) } }\n\
             pub enum Failure { Crashed { code: i32 }, #[allow(dead_code)] Hung(u8), Gone = 3 }\n\
             pub trait Screen { fn close_help(&mut self); const NAME: &str; }\n\
             impl<T: Fn() -> u8> fmt::Display for Wrapper<T> where T: Clone { fn fmt() {} }\n\
             pub(crate) use crate::base::clock::SimClock;\n\
             #[cfg(test)] mod tests { fn a_test() {} }",
        ),
        ("", "pub mod engine;"),
    ]);
    assert!(index.defines("engine::lane", "Lane"));
    assert!(index.defines("engine::lane", "SimClock"), "a pub use");
    assert!(index.defines("engine::lane::tests", "a_test"));
    assert!(
        !index.defines("engine::lane", "a_test"),
        "in the inline module only"
    );
    assert_eq!(index.modules_ending_with(&["lane"]), vec!["engine::lane"]);
    assert!(
        index.modules_ending_with(&["ane"]).is_empty(),
        "whole segments"
    );
    for (owner, member) in [
        ("Lane", "slots"),
        ("Lane", "map"),
        ("Lane", "command"),
        ("Failure", "Crashed"),
        ("Failure", "Hung"),
        ("Failure", "Gone"),
        ("Screen", "close_help"),
        ("Screen", "NAME"),
        ("Wrapper", "fmt"),
    ] {
        assert!(index.has_member(owner, member), "{owner}::{member}");
    }
    for (owner, member) in [
        ("Lane", "String"),
        ("Lane", "u32"),
        ("Failure", "code"),
        ("Failure", "allow"),
    ] {
        assert!(!index.has_member(owner, member), "{owner}::{member}");
    }
    assert!(index.is_type("Screen") && index.is_variant("Hung") && index.is_function("close_help"));
}
