// @aggregate classes in kernels: building an instance (the fields'
// constructor or the class's own __init__, lowered as kernel code), reading
// its fields, calling its methods, `obj[i]` through its __getitem__, and
// tl.aggregate_replace. An instance is a structured symbol
// (symbol_leaves.h): it crosses loops and `if`s as the leaves of its fields,
// and two instances have the same structure only if they are of one class.
#include <algorithm>

#include "frontend/builtins.h"
#include "frontend/lowering.h"
#include "frontend/symbol_leaves.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

// "a,b,c" -> {"a", "b", "c"}; "" -> {}.
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  for (size_t start = 0; !list.empty() && start <= list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The parts of a class symbol (GlobalValue::Kind::AggregateType's layout).
struct ClassView {
  std::string name;  // as the user wrote it: "Pair"
  std::vector<std::string> fields;
  std::vector<std::string> with_default;  // names, parallel to defaults
  const std::vector<Symbol>* defaults = nullptr;
  std::vector<std::string> members;  // names, a static one's with its leading '@'
  const std::vector<Symbol>* member_values = nullptr;
  std::vector<std::string> constexpr_fields;
  std::vector<std::string> bases;  // "Qualname@module" of each aggregate base class

  explicit ClassView(const Symbol& cls) {
    size_t colon = cls.name.find(':');
    std::string qualified = cls.name.substr(0, cls.name.find('@'));
    size_t dot = qualified.rfind('.');
    name = dot == std::string::npos ? qualified : qualified.substr(dot + 1);
    fields = split_list(colon == std::string::npos ? std::string() : cls.name.substr(colon + 1));
    TEGULA_ASSERT(cls.elements.size() == 4, "an aggregate class symbol has four parts");
    with_default = split_list(cls.elements[0].name);
    defaults = &cls.elements[0].elements;
    members = split_list(cls.elements[1].name);
    member_values = &cls.elements[1].elements;
    constexpr_fields = split_list(cls.elements[2].name);
    bases = split_list(cls.elements[3].name);
  }

  std::optional<size_t> field(const std::string& f) const {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i] == f) return i;
    return std::nullopt;
  }
  const Symbol* default_of(const std::string& f) const {
    for (size_t i = 0; i < with_default.size() && i < defaults->size(); ++i)
      if (with_default[i] == f) return &(*defaults)[i];
    return nullptr;
  }
  // The member named `m`, and whether it is a static method.
  std::optional<std::pair<const Symbol*, bool>> member(const std::string& m) const {
    for (size_t i = 0; i < members.size() && i < member_values->size(); ++i) {
      bool is_static = !members[i].empty() && members[i][0] == '@';
      if ((is_static ? members[i].substr(1) : members[i]) == m) return std::make_pair(&(*member_values)[i], is_static);
    }
    return std::nullopt;
  }
  bool is_constexpr(const std::string& f) const {
    return std::find(constexpr_fields.begin(), constexpr_fields.end(), f) != constexpr_fields.end();
  }
};

// A field not set yet: an instance while its __init__ runs.
Symbol unset_field() { return Symbol::opaque(""); }
bool is_unset(const Symbol& s) { return s.kind == Symbol::Kind::Opaque && s.name.empty(); }

}  // namespace

bool is_aggregate_instance_of(const Symbol& obj, const Symbol& cls) {
  if (obj.kind != Symbol::Kind::Aggregate || cls.kind != Symbol::Kind::AggregateType) return false;
  if (obj.name == cls.name) return true;
  std::string identity = cls.name.substr(0, cls.name.find(':'));
  ClassView view(*obj.receiver);
  return std::find(view.bases.begin(), view.bases.end(), identity) != view.bases.end();
}

std::string Lowerer::aggregate_name(const Symbol& s) {
  const Symbol& cls = s.kind == Symbol::Kind::Aggregate ? *s.receiver : s;
  return ClassView(cls).name;
}

void Lowerer::check_field_value(const Symbol& cls, const std::string& field, const Symbol& value,
                                const SourceLoc& loc) {
  ClassView view(cls);
  if (view.is_constexpr(field) && !is_compile_time(value))
    error_at(loc, Diag::ConstexprGotRuntimeValue,
             "the field `" + field + "` of `" + view.name + "` is a tl.constexpr but receives " + describe(value) +
                 ", which is not known when the kernel compiles",
             "pass a constant (a literal, a constexpr parameter, a dtype), or annotate the field tl.tensor");
}

Symbol Lowerer::make_aggregate(const Symbol& cls, const CallArgs& args) {
  ClassView view(cls);
  Symbol instance;
  instance.kind = Symbol::Kind::Aggregate;
  instance.name = cls.name;
  instance.receiver = std::make_shared<Symbol>(cls);

  if (auto init = view.member("__init__")) {  // the class's own __init__, lowered as kernel code
    const Symbol& fn = *init->first;
    if (fn.kind != Symbol::Kind::JitFunction)
      error_at(args.loc, Diag::HostObjectInKernel,
               "the __init__ of `" + view.name + "` is " + describe(fn) + ", which a kernel cannot run",
               "give the class an __init__ written in kernel code, or none (the fields are then its arguments)");
    instance.elements.assign(view.fields.size(), unset_field());
    CallArgs with_self = args;
    with_self.positional.insert(with_self.positional.begin(), instance);
    with_self.positional_locs.insert(with_self.positional_locs.begin(), args.loc);
    Symbol built = call_jit(fn.function, with_self, /*aggregate_init=*/true);
    for (size_t i = 0; i < view.fields.size(); ++i)
      if (is_unset(built.elements[i]))
        error_at(args.loc, Diag::WrongArgumentCount,
                 "the __init__ of `" + view.name + "` does not set the field `" + view.fields[i] + "`",
                 "assign every field in __init__: self." + view.fields[i] + " = ...");
    return built;
  }

  if (args.positional.size() > view.fields.size())
    error_at(args.loc, Diag::WrongArgumentCount,
             "`" + view.name + "` takes " + std::to_string(view.fields.size()) + " fields but " +
                 std::to_string(args.positional.size()) + " were given");
  std::vector<std::optional<Symbol>> bound(view.fields.size());
  std::vector<SourceLoc> locs(view.fields.size(), args.loc);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    bound[i] = args.positional[i];
    if (i < args.positional_locs.size()) locs[i] = args.positional_locs[i];
  }
  for (size_t k = 0; k < args.keywords.size(); ++k) {
    const auto& [field, value] = args.keywords[k];
    std::optional<size_t> i = view.field(field);
    if (!i)
      error_at(args.keyword_locs[k], Diag::UnknownKeywordArgument, "`" + view.name + "` has no field named `" + field + "`");
    if (bound[*i])
      error_at(args.keyword_locs[k], Diag::DuplicateArgument, "`" + view.name + "` got multiple values for `" + field + "`");
    bound[*i] = value;
    locs[*i] = args.keyword_locs[k];
  }
  for (size_t i = 0; i < view.fields.size(); ++i) {
    if (!bound[i])
      if (const Symbol* d = view.default_of(view.fields[i])) bound[i] = *d;
    if (!bound[i])
      error_at(args.loc, Diag::WrongArgumentCount, "`" + view.name + "` is missing the field `" + view.fields[i] + "`");
    check_field_value(cls, view.fields[i], *bound[i], locs[i]);
    instance.elements.push_back(*bound[i]);
  }
  return instance;
}

Symbol Lowerer::host_aggregate(const GlobalValue& cls, std::vector<Symbol> fields, const SourceLoc& loc) {
  Symbol type = global_symbol(cls, loc);
  ClassView view(type);
  TEGULA_ASSERT(fields.size() == view.fields.size(), "a host aggregate has one value per field");
  for (size_t i = 0; i < fields.size(); ++i) check_field_value(type, view.fields[i], fields[i], loc);
  Symbol instance;
  instance.kind = Symbol::Kind::Aggregate;
  instance.name = type.name;
  instance.receiver = std::make_shared<Symbol>(std::move(type));
  instance.elements = std::move(fields);
  return instance;
}

Symbol Lowerer::aggregate_attribute(const Symbol& base, const std::string& attr, const SourceLoc& loc) {
  bool is_class = base.kind == Symbol::Kind::AggregateType;
  ClassView view(is_class ? base : *base.receiver);
  if (!is_class) {
    if (std::optional<size_t> i = view.field(attr)) {
      const Symbol& value = base.elements[*i];
      if (is_unset(value))
        error_at(loc, Diag::PossiblyUndefinedName,
                 "the field `" + attr + "` of `" + view.name + "` is read before __init__ sets it");
      return value;
    }
  }
  if (auto member = view.member(attr)) {
    const auto& [value, is_static] = *member;
    bool function = value->kind == Symbol::Kind::JitFunction || value->kind == Symbol::Kind::HostFunction;
    if (is_class || is_static || !function) return *value;
    Symbol m;  // a method bound to this instance
    m.kind = Symbol::Kind::Method;
    m.name = attr;
    m.receiver = std::make_shared<Symbol>(base);
    m.elements = {*value};
    return m;
  }
  if (is_class)
    if (const Symbol* d = view.default_of(attr)) return *d;  // a field's default is an attribute of the class
  error_at(loc, Diag::NoSuchAttribute,
           "`" + view.name + "` has no " + (is_class ? "member" : "field or method") + " named `" + attr + "`");
}

Symbol Lowerer::aggregate_subscript(const Symbol& base, const std::vector<Symbol>& index,
                                    const std::vector<SourceLoc>& locs, const SourceLoc& loc) {
  ClassView view(*base.receiver);
  auto getitem = view.member("__getitem__");
  if (!getitem || getitem->first->kind != Symbol::Kind::JitFunction)
    error_at(loc, Diag::InvalidTupleIndex, "an instance of `" + view.name + "` cannot be indexed",
             "give `" + view.name + "` a __getitem__ method, or read its fields by name");
  CallArgs args;
  args.positional = {base, index.size() == 1 ? index[0] : Symbol::tuple(index)};
  args.positional_locs = {loc, locs.empty() ? loc : locs[0]};
  args.loc = loc;
  return call_jit(getitem->first->function, args);
}

void Lowerer::set_aggregate_field(const ast::Expr& target, const Symbol& value) {
  const ast::Expr& object = *target.children[0];
  const std::string& self = frame().aggregate_init_self;
  if (object.kind != ast::ExprKind::Name || self.empty() || object.name != self) {
    std::string why = "assigning to an attribute is not supported inside a kernel";
    if (object.kind == ast::ExprKind::Name)
      if (auto it = frame().vars.find(object.name); it != frame().vars.end() && it->second.kind == Symbol::Kind::Aggregate)
        error_at(target.loc, Diag::UnsupportedStatement,
                 "the fields of `" + aggregate_name(it->second) + "` are set only in its __init__",
                 "make a changed copy: " + object.name + " = tl.aggregate_replace(" + object.name + ", " + target.name +
                     "=...)");
    error_at(target.loc, Diag::UnsupportedStatement, why);
  }
  Symbol instance = lookup(self, object.loc);
  TEGULA_ASSERT(instance.kind == Symbol::Kind::Aggregate, "self of an aggregate's __init__ is its instance");
  ClassView view(*instance.receiver);
  std::optional<size_t> i = view.field(target.name);
  if (!i)
    error_at(target.loc, Diag::NoSuchAttribute, "`" + view.name + "` has no field named `" + target.name + "`",
             "declare it in the class body with an annotation (" + target.name + ": tl.tensor)");
  check_field_value(*instance.receiver, target.name, value, target.loc);
  instance.elements[*i] = value;
  assign(self, std::move(instance));
}

Symbol lower_aggregate_replace(Lowerer& l, const CallArgs& c, const std::string&) {
  if (c.positional.size() != 1)
    error_at(c.loc, Diag::WrongArgumentCount,
             "tl.aggregate_replace takes the instance, then the changed fields by name: "
             "tl.aggregate_replace(obj, field=value)");
  const Symbol& instance = c.positional[0];
  if (instance.kind != Symbol::Kind::Aggregate)
    error_at(c.positional_locs.empty() ? c.loc : c.positional_locs[0], Diag::WrongArgumentKind,
             "tl.aggregate_replace takes an instance of an @aggregate class, but got " + l.describe(instance));
  ClassView view(*instance.receiver);
  Symbol copy = instance;
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    const auto& [field, value] = c.keywords[k];
    std::optional<size_t> i = view.field(field);
    if (!i)
      error_at(c.keyword_locs[k], Diag::UnknownKeywordArgument, "`" + view.name + "` has no field named `" + field + "`");
    l.check_field_value(*instance.receiver, field, value, c.keyword_locs[k]);
    copy.elements[*i] = value;
  }
  return copy;
}

}  // namespace tegula::frontend
