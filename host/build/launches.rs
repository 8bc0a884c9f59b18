//! The host's typed launches, generated from the kernels' own signatures.
//!
//! Reads every `kernel! { .. fn name(params) { .. } }` and `extern "ptx-kernel" fn` of
//! `kernels-gpu/src`, and writes `OUT_DIR/launches.rs`: one `pub fn name(shape, args..) ->
//! Launch` per entry, its host argument types mapped from the device ones by [`host_type`],
//! an `entry::name` constant (name and PTX parameters) and `ENTRIES`, all of them in entry-name
//! order. A kernel's parameter list is so written once, in the kernel; the PTX `.param` test of
//! `host/tests/launch_params.rs` checks the result against the built PTX.
//!
//! A `kernel!` inside a `macro_rules!` names its entry by a macro variable: the rung-8 family,
//! instantiated by `memlab_contracts::tuned_configs!`, whose names come from
//! `memlab_contracts::sgemm::TUNED`.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, Item, Token, Type, Visibility};

use super::fail;

/// One kernel entry: where it is written and its parameters as the kernel declares them.
struct Kernel {
    file: String,
    params: Vec<(String, String)>,
}

/// `name: Type`, one kernel parameter.
struct Param {
    name: Ident,
    ty: Type,
}

impl Parse for Param {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        Ok(Param { name, ty: input.parse()? })
    }
}

/// The head of a `kernel!` invocation: attributes, visibility, `fn`, name and parameters; the
/// body is left unread.
struct KernelHead {
    name: Ident,
    params: Punctuated<Param, Token![,]>,
}

impl Parse for KernelHead {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Attribute::parse_outer(input)?;
        input.parse::<Visibility>()?;
        input.parse::<Token![fn]>()?;
        let name = input.parse()?;
        let inside;
        syn::parenthesized!(inside in input);
        let params = inside.parse_terminated(Param::parse, Token![,])?;
        input.parse::<TokenStream>()?;
        Ok(KernelHead { name, params })
    }
}

/// The host type a launch takes for device parameter type `ty`, or `None` when no parameter of
/// the launch corresponds (`Block`, the block's own handle).
fn host_type(ty: &str, at: &str) -> Option<String> {
    let inner = |prefix: &str| ty.strip_prefix(prefix).and_then(|t| t.strip_suffix('>')).map(str::trim);
    let host = match ty {
        "Block" => return None,
        "u32" | "u64" | "f32" => ty.to_string(),
        "MapIn" => "MapSlot".to_string(),
        // A device address the kernel reads as a chain of links (`device/probe.rs`).
        "ChainAddr" => "u64".to_string(),
        _ if inner("GlobalIn <").is_some() => format!("&DeviceBuffer<{}>", inner("GlobalIn <").unwrap()),
        _ if inner("GlobalOut <").is_some() => format!("&mut DeviceBuffer<{}>", inner("GlobalOut <").unwrap()),
        _ if ty.starts_with("* const ") => format!("&DeviceBuffer<{}>", &ty["* const ".len()..]),
        _ if ty.starts_with("* mut ") => format!("&mut DeviceBuffer<{}>", &ty["* mut ".len()..]),
        _ => fail(&format!("{at}: a kernel parameter of type `{ty}` has no host type (host/build/launches.rs)")),
    };
    Some(host)
}

fn params(list: &Punctuated<Param, Token![,]>) -> Vec<(String, String)> {
    list.iter().map(|p| (p.name.to_string(), p.ty.to_token_stream().to_string())).collect()
}

/// Every entry of `kernels-gpu/src`, by name.
fn find_kernels(src: &Path) -> BTreeMap<String, Kernel> {
    let mut found = BTreeMap::new();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    for path in files {
        let file = path.strip_prefix(src.parent().unwrap()).unwrap().display().to_string();
        let text = fs::read_to_string(&path).unwrap();
        let tree = syn::parse_file(&text).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
        let mut add = |name: String, params: Vec<(String, String)>| {
            if let Some(old) = found.insert(name.clone(), Kernel { file: file.clone(), params }) {
                fail(&format!("kernel `{name}` is written twice: {} and {file}", old.file));
            }
        };
        items(&tree.items, &file, &mut add);
        for (template, params) in templates(&tree.items) {
            let callback = format!("tuned_configs ! ({template})");
            if !text.replace(' ', "").contains(&callback.replace(' ', "")) {
                fail(&format!("{file}: `macro_rules! {template}` makes kernels; only `tuned_configs!` may call it"));
            }
            for tuned in memlab_contracts::sgemm::TUNED {
                add(tuned.name.to_string(), params.clone());
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The entries declared by `items` (and the inline modules among them).
fn items(items: &[Item], file: &str, add: &mut impl FnMut(String, Vec<(String, String)>)) {
    for item in items {
        match item {
            Item::Macro(m) if m.mac.path.is_ident("kernel") => {
                let head: KernelHead =
                    m.mac.parse_body().unwrap_or_else(|e| fail(&format!("{file}: a `kernel!` does not parse: {e}")));
                add(head.name.to_string(), params(&head.params));
            }
            Item::Fn(f)
                if f.sig.abi.as_ref().and_then(|a| a.name.as_ref()).is_some_and(|n| n.value() == "ptx-kernel") =>
            {
                let list = f.sig.inputs.iter().map(|arg| match arg {
                    syn::FnArg::Typed(t) => (t.pat.to_token_stream().to_string(), t.ty.to_token_stream().to_string()),
                    syn::FnArg::Receiver(_) => fail(&format!("{file}: a kernel takes no `self`")),
                });
                add(f.sig.ident.to_string(), list.collect());
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    self::items(inner, file, add);
                }
            }
            _ => {}
        }
    }
}

/// `(macro name, parameters)` of each `macro_rules!` among `items` whose expansion holds a
/// `kernel!` named by a macro variable (`fn $name(..)`).
fn templates(items: &[Item]) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for item in items {
        let Item::Macro(m) = item else { continue };
        let (true, Some(ident)) = (m.mac.path.is_ident("macro_rules"), &m.ident) else { continue };
        if let Some(params) = template_params(m.mac.tokens.clone()) {
            out.push((ident.to_string(), params));
        }
    }
    out
}

/// The parameters of the first `kernel! { .. fn $name(params) .. }` in `tokens`, at any depth.
fn template_params(tokens: TokenStream) -> Option<Vec<(String, String)>> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tokens.iter().enumerate() {
        let TokenTree::Group(group) = tt else { continue };
        let is_kernel = i >= 2
            && matches!(&tokens[i - 2], TokenTree::Ident(id) if id == "kernel")
            && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!');
        if is_kernel && group.delimiter() == Delimiter::Brace {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            let at = inner.windows(4).position(|w| {
                matches!(&w[0], TokenTree::Ident(id) if id == "fn")
                    && matches!(&w[1], TokenTree::Punct(p) if p.as_char() == '$')
                    && matches!(&w[3], TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis)
            })?;
            let TokenTree::Group(list) = &inner[at + 3] else { unreachable!() };
            let parsed = syn::parse::Parser::parse2(Punctuated::<Param, Token![,]>::parse_terminated, list.stream())
                .unwrap_or_else(|e| fail(&format!("a kernel template's parameters do not parse: {e}")));
            return Some(params(&parsed));
        }
        if let Some(found) = template_params(group.stream()) {
            return Some(found);
        }
    }
    None
}

/// Writes `out_dir/launches.rs` for the kernels of `kernels/src`.
pub fn write(kernels: &Path, out_dir: &Path) {
    let mut launches = String::new();
    let mut entries = String::new();
    let all = find_kernels(&kernels.join("src"));
    for (name, kernel) in &all {
        let at = format!("{} ({name})", kernel.file);
        let args: Vec<(&str, String)> =
            kernel.params.iter().filter_map(|(p, ty)| host_type(ty, &at).map(|h| (p.as_str(), h))).collect();
        let signature: Vec<String> = args.iter().map(|(p, ty)| format!("{p}: {ty}")).collect();
        let bytes: Vec<String> = args.iter().map(|(p, _)| format!("KernelArg::bytes(&{p})")).collect();
        let kinds: Vec<String> = args.iter().map(|(_, ty)| format!("<{ty} as KernelArg>::PARAM")).collect();
        launches.push_str(&format!(
            "/// Launches `{name}` (`kernels-gpu/{file}`, whose doc gives its launch shape and buffers)\n\
             /// with `shape`, its arguments in the entry's order.\n\
             #[allow(clippy::too_many_arguments)]\n\
             pub fn {name}(shape: LaunchShape, {sig}) -> Launch {{\n    \
                 Launch::new(entry::{name}.name, shape, vec![{bytes}])\n}}\n\n",
            file = kernel.file,
            sig = signature.join(", "),
            bytes = bytes.join(", "),
        ));
        entries.push_str(&format!(
            "    #[allow(non_upper_case_globals)]\n    \
             /// The entry of [`{name}`](super::{name}).\n    \
             pub const {name}: Entry = Entry {{ name: \"{name}\", params: &[{kinds}] }};\n",
            kinds = kinds.join(", "),
        ));
    }
    let list: Vec<String> = all.keys().map(|n| format!("entry::{n}")).collect();
    let text = format!(
        "{launches}/// Each typed launch's entry: the PTX name and parameters.\npub mod entry {{\n    \
         use super::*;\n{entries}}}\n\n/// Every entry the host launches, by name.\n\
         pub const ENTRIES: &[Entry] = &[{list}];\n",
        list = list.join(", ")
    );
    fs::write(out_dir.join("launches.rs"), text).unwrap();
}
