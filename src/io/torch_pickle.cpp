// PyTorch state-dict files (see torch_pickle.h).
#include "io/torch_pickle.h"

#include <cstring>
#include <map>
#include <memory>
#include <variant>

#include "base/error.h"
#include "io/read_file.h"
#include "io/zip.h"

namespace dragoman::io {
namespace {

// The values the restricted pickle machine builds.
struct Value;
using Ref = std::shared_ptr<Value>;
struct Global {
  std::string module, name;
  std::string full() const { return module + "." + name; }
};
struct Storage {
  DType dtype = DType::kF32;
  std::string key;  // the member data/<key>
};
struct TensorRef {
  Ref storage;
  std::int64_t offset = 0;
  std::vector<std::int64_t> shape, stride;
};
struct Dict {
  std::vector<std::pair<Ref, Ref>> items;
};
struct Mark {};
struct Value {
  std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<Ref>, Dict, Global, Storage,
               TensorRef, Mark>
      v;
};

Ref make(decltype(Value::v) v) { return std::make_shared<Value>(Value{std::move(v)}); }

class Unpickler {
 public:
  Unpickler(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}

  Ref run() {
    while (true) {
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80: byte(); break;                         // PROTO
        case 0x95: bytes(8); break;                       // FRAME
        case '.': return pop();                           // STOP
        case '(': stack_.push_back(make(Mark{})); break;  // MARK
        case 'N': stack_.push_back(make(std::monostate{})); break;
        case 0x88: stack_.push_back(make(true)); break;
        case 0x89: stack_.push_back(make(false)); break;
        case 'K': stack_.push_back(make(static_cast<std::int64_t>(uint(1)))); break;
        case 'M': stack_.push_back(make(static_cast<std::int64_t>(uint(2)))); break;
        case 'J': stack_.push_back(make(static_cast<std::int64_t>(static_cast<std::int32_t>(uint(4))))); break;
        case 0x8a: {  // LONG1: n little-endian two's complement bytes
          const std::size_t n = uint(1);
          if (n > 8) fail("an integer of " + std::to_string(n) + " bytes");
          std::uint64_t v = 0;
          const std::string_view b = bytes(n);
          for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
          if (n > 0 && n < 8 && (static_cast<unsigned char>(b[n - 1]) & 0x80)) v |= ~std::uint64_t{0} << (8 * n);
          stack_.push_back(make(static_cast<std::int64_t>(v)));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian double
          std::uint64_t bits = 0;
          for (const char c : bytes(8)) bits = (bits << 8) | static_cast<unsigned char>(c);
          double d;
          std::memcpy(&d, &bits, 8);
          stack_.push_back(make(d));
          break;
        }
        case 0x8c: stack_.push_back(make(std::string(bytes(uint(1))))); break;  // SHORT_BINUNICODE
        case 'X': stack_.push_back(make(std::string(bytes(uint(4))))); break;   // BINUNICODE
        case 0x8d: stack_.push_back(make(std::string(bytes(uint(8))))); break;  // BINUNICODE8
        case 'U': stack_.push_back(make(std::string(bytes(uint(1))))); break;   // SHORT_BINSTRING
        case 'T': stack_.push_back(make(std::string(bytes(uint(4))))); break;   // BINSTRING
        case ')': stack_.push_back(make(std::vector<Ref>{})); break;
        case ']': stack_.push_back(make(std::vector<Ref>{})); break;
        case '}': stack_.push_back(make(Dict{})); break;
        case 't':
        case 'l': stack_.push_back(make(pop_to_mark())); break;  // TUPLE, LIST
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          std::vector<Ref> items(op - 0x84);
          for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
          stack_.push_back(make(std::move(items)));
          break;
        }
        case 'q': memo_[uint(1)] = top(); break;           // BINPUT
        case 'r': memo_[uint(4)] = top(); break;           // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break;     // MEMOIZE
        case 'h': stack_.push_back(memo(uint(1))); break;  // BINGET
        case 'j': stack_.push_back(memo(uint(4))); break;  // LONG_BINGET
        case 'c': {                                        // GLOBAL "module\nname\n"
          std::string module = line(), name = line();
          stack_.push_back(make(Global{std::move(module), std::move(name)}));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const std::string name = as<std::string>(pop(), "a global's name"),
                            module = as<std::string>(pop(), "a global's module");
          stack_.push_back(make(Global{module, name}));
          break;
        }
        case 'Q': stack_.push_back(persistent(pop())); break;  // BINPERSID
        case 'R': {                                            // REDUCE
          const Ref args = pop();
          stack_.push_back(reduce(as<Global>(pop(), "a callable"), as<std::vector<Ref>>(args, "arguments")));
          break;
        }
        case 0x81: {  // NEWOBJ: cls.__new__(cls, *args): only OrderedDict
          const Ref args = pop();
          stack_.push_back(reduce(as<Global>(pop(), "a class"), as<std::vector<Ref>>(args, "arguments")));
          break;
        }
        case 'b': pop(); break;  // BUILD: the state of an OrderedDict (its metadata) is not needed
        case 's': {              // SETITEM
          const Ref value = pop(), key = pop();
          dict(top()).items.emplace_back(key, value);
          break;
        }
        case 'u': {  // SETITEMS
          const std::vector<Ref> kv = pop_to_mark();
          if (kv.size() % 2 != 0) fail("SETITEMS with an odd count");
          Dict& d = dict(top());
          for (std::size_t i = 0; i < kv.size(); i += 2) d.items.emplace_back(kv[i], kv[i + 1]);
          break;
        }
        case 'a': {  // APPEND
          const Ref v = pop();
          list(top()).push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          const std::vector<Ref> items = pop_to_mark();
          std::vector<Ref>& l = list(top());
          l.insert(l.end(), items.begin(), items.end());
          break;
        }
        default: fail("pickle opcode 0x" + hex(op) + " (not one torch.save writes for a dict of tensors)");
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_ + ": not a usable PyTorch state dict: " + what + " at byte " + std::to_string(at_));
  }
  static std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return {digits[(v >> 4) & 15], digits[v & 15]};
  }
  char byte() { return bytes(1)[0]; }
  std::string_view bytes(std::size_t n) {
    if (n > data_.size() - at_) fail("the pickle ends early");
    const std::string_view b = data_.substr(at_, n);
    at_ += n;
    return b;
  }
  std::uint64_t uint(std::size_t n) {
    std::uint64_t v = 0;
    const std::string_view b = bytes(n);
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }
  std::string line() {
    const std::size_t end = data_.find('\n', at_);
    if (end == std::string_view::npos) fail("an unterminated GLOBAL");
    std::string s(data_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }
  Ref pop() {
    if (stack_.empty() || std::holds_alternative<Mark>(stack_.back()->v)) fail("a pop from an empty stack");
    Ref r = stack_.back();
    stack_.pop_back();
    return r;
  }
  Ref top() {
    if (stack_.empty()) fail("an empty stack");
    return stack_.back();
  }
  std::vector<Ref> pop_to_mark() {
    std::vector<Ref> items;
    while (!stack_.empty() && !std::holds_alternative<Mark>(stack_.back()->v)) {
      items.push_back(stack_.back());
      stack_.pop_back();
    }
    if (stack_.empty()) fail("no MARK");
    stack_.pop_back();
    return {items.rbegin(), items.rend()};
  }
  Ref memo(std::uint64_t i) {
    const auto it = memo_.find(i);
    if (it == memo_.end()) fail("an unknown memo entry");
    return it->second;
  }
  template <typename T>
  T& as(const Ref& r, const char* what) {
    T* p = std::get_if<T>(&r->v);
    if (p == nullptr) fail(std::string("expected ") + what);
    return *p;
  }
  Dict& dict(const Ref& r) { return as<Dict>(r, "a dict"); }
  std::vector<Ref>& list(const Ref& r) { return as<std::vector<Ref>>(r, "a list"); }
  std::vector<std::int64_t> ints(const Ref& r, const char* what) {
    std::vector<std::int64_t> out;
    for (const Ref& x : as<std::vector<Ref>>(r, what)) out.push_back(as<std::int64_t>(x, what));
    return out;
  }

  // ('storage', torch.FloatStorage, key, location, numel)
  Ref persistent(const Ref& pid) {
    const std::vector<Ref>& t = as<std::vector<Ref>>(pid, "a storage's persistent id");
    if (t.size() < 3 || as<std::string>(t[0], "'storage'") != "storage") fail("a persistent id that is not a storage");
    const std::string type = as<Global>(t[1], "a storage type").name;
    static const std::map<std::string, DType> kTypes = {
        {"FloatStorage", DType::kF32},     {"DoubleStorage", DType::kF64}, {"HalfStorage", DType::kF16},
        {"BFloat16Storage", DType::kBF16}, {"IntStorage", DType::kI32},    {"ByteStorage", DType::kU8},
        {"CharStorage", DType::kI8}};
    const auto it = kTypes.find(type);
    if (it == kTypes.end()) fail("a " + type + " (read: float, double, half, bfloat16, int, byte and char storages)");
    return make(Storage{it->second, as<std::string>(t[2], "a storage key")});
  }

  Ref reduce(const Global& f, std::vector<Ref>& args) {
    const std::string name = f.full();
    if (name == "collections.OrderedDict") return make(Dict{});
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (args.size() < 4) fail(name + " with " + std::to_string(args.size()) + " arguments");
      as<Storage>(args[0], "a storage");
      return make(TensorRef{args[0], as<std::int64_t>(args[1], "an offset"), ints(args[2], "a size"),
                            ints(args[3], "a stride")});
    }
    if (name == "torch._utils._rebuild_parameter") {
      if (args.empty()) fail(name + " without arguments");
      as<TensorRef>(args[0], "a tensor");
      return args[0];
    }
    fail("the callable " + name + " (a state dict holds tensors only)");
  }

  std::string_view data_;
  std::string where_;
  std::size_t at_ = 0;
  std::vector<Ref> stack_;
  std::map<std::uint64_t, Ref> memo_;
};

}  // namespace

std::vector<SafeTensor> decode_torch_state_dict(const std::string& name, std::string_view bytes) {
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x80) {
    throw Error(name +
                ": a legacy (pre-1.6) PyTorch file: re-save it with a recent torch.save, or as safetensors "
                "(save_pretrained(safe_serialization=True))");
  }
  const ZipArchive zip(name, bytes, "PyTorch file (torch.save's ZIP format)");
  std::string pickle, prefix;
  for (const std::string& member : zip.names()) {
    const std::size_t slash = member.find('/');
    if (slash != std::string::npos && member.substr(slash + 1) == "data.pkl") {
      prefix = member.substr(0, slash + 1);
      pickle = zip.read(member);
    }
  }
  if (prefix.empty()) throw Error(name + ": no data.pkl: not a torch.save file");
  for (const std::string& member : zip.names()) {
    if (member == prefix + "byteorder" && zip.read(member) != "little") {
      throw Error(name + ": a big-endian PyTorch file");
    }
  }
  Unpickler machine(pickle, name + " (" + prefix + "data.pkl)");
  const Ref root = machine.run();
  const Dict* dict = std::get_if<Dict>(&root->v);
  if (dict == nullptr) throw Error(name + ": the pickle is not a dict of tensors");
  std::map<std::string, std::string> storages;  // key -> bytes, read once
  std::vector<SafeTensor> out;
  for (const auto& [key, value] : dict->items) {
    const std::string* tensor_name = std::get_if<std::string>(&key->v);
    const TensorRef* t = std::get_if<TensorRef>(&value->v);
    if (tensor_name == nullptr || t == nullptr) throw Error(name + ": the pickle is not a dict of name -> tensor");
    const Storage& s = std::get<Storage>(t->storage->v);
    auto it = storages.find(s.key);
    if (it == storages.end()) it = storages.emplace(s.key, zip.read(prefix + "data/" + s.key)).first;
    const std::string& data = it->second;
    const std::size_t elem = dtype_size(s.dtype);
    SafeTensor tensor{*tensor_name, s.dtype, t->shape, {}};
    if (t->stride.size() != t->shape.size() || t->offset < 0) {
      throw Error(name + ": tensor '" + *tensor_name + "' has a stride of another rank than its size");
    }
    const std::int64_t n = tensor.numel();
    tensor.data.resize(static_cast<std::size_t>(n) * elem);
    // Element i's position in the storage from its index and the strides (any layout), each checked.
    std::vector<std::int64_t> index(t->shape.size(), 0);
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t at = t->offset;
      for (std::size_t d = 0; d < index.size(); ++d) at += index[d] * t->stride[d];
      if (at < 0 || static_cast<std::uint64_t>(at) >= data.size() / elem) {
        throw Error(name + ": tensor '" + *tensor_name + "' reaches past its storage");
      }
      std::memcpy(&tensor.data[static_cast<std::size_t>(i) * elem], &data[static_cast<std::size_t>(at) * elem], elem);
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < t->shape[d]) break;
        index[d] = 0;
      }
    }
    out.push_back(std::move(tensor));
  }
  return out;
}

std::vector<SafeTensor> read_torch_state_dict(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return decode_torch_state_dict(path, std::string_view(bytes.data(), bytes.size()));
}

}  // namespace dragoman::io
