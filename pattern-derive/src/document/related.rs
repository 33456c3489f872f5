//! The items of the patterns that relate a child type to its parent (`COMPUTED`, `SUBSET`) and
//! the methods of approximate counters. A parent's field is named through its typed-path
//! constant (`Film::RATING_SUM`) passed to a `const fn` of `pattern_core::document` that takes
//! only the right `Field` type: a field missing or of another type is an error at its name
//! alone (the parent's path is respanned there).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Type;

use crate::attr::document::{const_name as konst, ComputedAttr, SubsetAttr, Within};
use crate::attr::serde::unraw;
use crate::codegen::respan;

/// A `#[document(reference)]` field: its typed path's constant, its type, the key's span, and
/// where the copy is when not the field itself.
pub(super) type ReferenceField<'a> = (Ident, &'a Type, Span, Option<Within>);

/// `key_field::<Self, Parent>(Self::KEY)`: the child's key, of the parent's id type.
fn key_field(parent: &syn::Path, key: &Ident) -> TokenStream {
    let (k, p) = (konst(key), respan(parent, key.span()));
    let module = quote!(::pattern_core::document);
    quote_spanned!(key.span()=> #module::key_field::<Self, #p>(Self::#k))
}

/// `const COMPUTED`.
pub(super) fn computed(c: &ComputedAttr) -> TokenStream {
    let module = quote!(::pattern_core::document);
    let parent = &c.parent;
    let key = key_field(parent, &c.key);
    let count = match &c.count {
        Some(f) => {
            let (k, p) = (konst(f), respan(parent, f.span()));
            quote_spanned!(f.span()=> ::core::option::Option::Some(#module::count_field::<#p>(#p::#k)))
        }
        None => quote!(::core::option::Option::None),
    };
    let aggregates = c.aggregates.iter().map(|(op, child, into)| {
        let (ck, pk) = (konst(child), konst(into));
        let p = respan(parent, into.span());
        let check = match *op {
            "Sum" => quote_spanned!(into.span()=> #module::sum_field(Self::#ck, #p::#pk)),
            "Avg" => quote_spanned!(into.span()=> #module::avg_field(Self::#ck, #p::#pk)),
            _ => quote_spanned!(into.span()=> #module::extreme_field(Self::#ck, #p::#pk)),
        };
        let op = Ident::new(op, Span::call_site());
        quote! {
            #module::ComputedField {
                of: Self::#ck.name(),
                op: #module::ComputedOp::#op,
                into: #check,
            }
        }
    });
    quote! {
        const COMPUTED: ::core::option::Option<#module::Computed> =
            ::core::option::Option::Some(#module::Computed {
                parent: <#parent as #module::Document>::COLLECTION,
                key: #key,
                count: #count,
                aggregates: &[#(#aggregates),*],
                children: #module::Scope::of(<Self as #module::Document>::POLYMORPHIC),
            });
    }
}

/// `const SUBSET`.
pub(super) fn subset(sb: &SubsetAttr) -> TokenStream {
    let module = quote!(::pattern_core::document);
    let parent = &sb.parent;
    let key = key_field(parent, &sb.key);
    let (into, order) = (konst(&sb.into), konst(&sb.order));
    let p = respan(parent, sb.into.span());
    let into = quote_spanned!(sb.into.span()=> #module::subset_field::<Self, #p>(#p::#into));
    let order = quote_spanned!(sb.order.span()=> #module::order_field(Self::#order));
    let keep = sb.keep;
    quote! {
        const SUBSET: ::core::option::Option<#module::Subset> =
            ::core::option::Option::Some(#module::Subset {
                parent: <#parent as #module::Document>::COLLECTION,
                key: #key,
                into: #into,
                keep: #keep,
                order: #order,
                children: #module::Scope::of(<Self as #module::Document>::POLYMORPHIC),
            });
    }
}

/// `const REFERENCES`, `REFERENCED_BY` and `PROPAGATION`; and, outside the impl, the check that
/// each reference field's source lists it in its `referenced_by` (a const assertion at the
/// field's `reference` key).
pub(super) fn references(
    ident: &Ident,
    references: &[ReferenceField],
    referenced_by: &[(syn::Path, Ident, Option<Ident>)],
    propagation: Option<(u32, bool)>,
    counters: bool,
) -> (TokenStream, TokenStream) {
    let module = quote!(::pattern_core::document);
    let fields = references.iter().map(|(k, _, span, within)| match within {
        None => quote_spanned!(*span=> #module::reference_field(Self::#k)),
        Some(w) => {
            let (f, name) = (&w.field, unraw(&w.field));
            let place = if w.each {
                quote_spanned!(f.span()=> reference_each)
            } else {
                quote_spanned!(f.span()=> reference_in)
            };
            quote_spanned!(*span=> #module::#place(Self::#k, #name, |m| m.#f))
        }
    });
    let mut items = TokenStream::new();
    if !references.is_empty() {
        items.extend(quote! {
            const REFERENCES: &'static [#module::ReferenceField] = &[#(#fields),*];
        });
    }
    if !referenced_by.is_empty() {
        let by = referenced_by.iter().map(|(ty, field, within)| {
            let k = konst(field);
            let t = respan(ty, field.span());
            match within {
                None => quote_spanned!(field.span()=> #module::referrer::<Self, #t, _>(#t::#k)),
                Some(w) => {
                    let name = unraw(w);
                    quote_spanned!(w.span()=> #module::referrer_at::<Self, #t, _>(#t::#k, #name))
                }
            }
        });
        let (fan_out, deferred) = propagation.unwrap_or((1_000, false));
        items.extend(quote! {
            const REFERENCED_BY: &'static [#module::Referrer] = &[#(#by),*];
            const PROPAGATION: #module::Propagation = #module::Propagation {
                fan_out: #fan_out,
                deferred: #deferred,
            };
        });
    }
    let checks = references.iter().map(|(k, ty, span, within)| {
        let mut field = k.to_string().to_lowercase();
        if let Some(w) = within {
            field = format!("{field}.{}", unraw(&w.field));
        }
        let message = format!(
            "the source of `{ident}::{field}` does not list it: add `referenced_by({ident} = \
             {field})` to the source's #[document(...)] (its writes must reach this copy)"
        );
        let listed = match within {
            None => quote_spanned! {*span=>
                #module::lists(
                    <<<#ty as #module::Slot>::Ref as #module::Reference>::Source
                        as #module::Document>::REFERENCED_BY,
                    <#ident as #module::Document>::COLLECTION,
                    #ident::#k.name(),
                    "",
                )
            },
            Some(w) => {
                let (f, name) = (&w.field, unraw(&w.field));
                let listed = if w.each {
                    quote!(listed_each)
                } else {
                    quote!(listed_in)
                };
                quote_spanned!(*span=> #module::#listed(#ident::#k, #name, |m| m.#f))
            }
        };
        quote_spanned! {*span=>
            const _: () = ::core::assert!(#listed, #message);
        }
    });
    let counters = (!referenced_by.is_empty() && counters).then(|| {
        let message = format!(
            "a copy of `{ident}` (referenced_by) holds one of its approximate counters, which \
             its increments would leave stale: copy another field, or count in another type"
        );
        quote! {
            const _: () = ::core::assert!(
                !#module::copies_a_counter(
                    <#ident as #module::Document>::REFERENCED_BY,
                    <#ident as #module::Document>::APPROXIMATE,
                ),
                #message
            );
        }
    });
    (items, quote!(#(#checks)* #counters))
}

/// `increment_<field>` per approximate counter, and `flush` when there is one.
pub(super) fn counters(fields: &[(&Ident, &String, u32)], id_ty: &TokenStream) -> Vec<TokenStream> {
    let mut out: Vec<TokenStream> = fields
        .iter()
        .map(|(field_ident, field, every)| {
            let name = unraw(field_ident);
            let method = format_ident!("increment_{}", name);
            let doc = format!(
                "Adds 1 to the approximate counter `{name}` of the document `id`: counted in this \
                 process, written (`$inc` of {every}, one `update`) by every {every}th increment; \
                 whether this call wrote. A crash loses fewer than {every} increments per \
                 document; `flush` writes the rest."
            );
            quote! {
                #[doc = #doc]
                pub async fn #method<__PatternS, __PatternQ>(
                    store: &__PatternS,
                    id: &__PatternQ,
                ) -> ::pattern_core::Result<bool>
                where
                    __PatternS: ::pattern_core::store::Store,
                    __PatternQ: ::pattern_core::spec::IdRef<#id_ty> + ?::core::marker::Sized,
                {
                    ::pattern_core::document::increment::<Self, __PatternS, __PatternQ>(store, #field, id).await
                }
            }
        })
        .collect();
    if !fields.is_empty() {
        out.push(quote! {
            /// Writes every increment of this type's approximate counters counted in this
            /// process and not yet written (one `update` per document and counter with some);
            /// how many. Call it before the process ends.
            pub async fn flush<__PatternS: ::pattern_core::store::Store>(
                store: &__PatternS,
            ) -> ::pattern_core::Result<u64> {
                ::pattern_core::document::flush::<Self, __PatternS>(store).await
            }
        });
    }
    out
}
