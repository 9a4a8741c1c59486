#include "decode/shortlist.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "base/error.h"
#include "io/line_reader.h"

namespace dragoman::decode {
namespace {

// The ids of the space-separated pieces of `text` (one side of `vocabulary`); `where` is the
// file:line errors name.
std::vector<std::int32_t> piece_ids(std::string_view text, const text::Vocabulary& side, const char* what,
                                    const std::string& where) {
  std::vector<std::int32_t> ids;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view piece = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (piece.empty()) continue;  // two spaces, or one at the end
    const std::int32_t id = side.piece_id(piece);
    if (id < 0) {
      throw Error(where + ": the " + what + " piece \"" + std::string(piece) +
                  "\" is not in the model's vocabulary (a shortlist built for another vocabulary?)");
    }
    ids.push_back(id);
  }
  return ids;
}

void sort_unique(std::vector<std::int32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

}  // namespace

Shortlist::Shortlist(std::int64_t target_size, std::vector<std::int32_t> always,
                     std::vector<std::vector<std::int32_t>> by_source)
    : target_size_(target_size), always_(std::move(always)), by_source_(std::move(by_source)) {
  const auto check = [this](const std::vector<std::int32_t>& ids) {
    for (const std::int32_t id : ids) {
      if (id < 0 || id >= target_size_) {
        throw Error("shortlist: target piece " + std::to_string(id) + " is not in [0, " + std::to_string(target_size_) +
                    ")");
      }
    }
  };
  sort_unique(always_);
  check(always_);
  for (std::vector<std::int32_t>& list : by_source_) {
    sort_unique(list);
    check(list);
  }
}

Shortlist Shortlist::load(const std::string& path, const text::Vocabulary& vocabulary) {
  io::LineReader reader(path);
  const text::Vocabulary& target = vocabulary.target();
  std::vector<std::int32_t> always;
  std::vector<std::vector<std::int32_t>> by_source;
  std::string line;
  bool any = false;
  while (reader.next(line)) {
    const std::string where = reader.name() + ":" + std::to_string(reader.line_number());
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      if (line.empty() || line.front() == '#') continue;
      throw Error(where +
                  ": expected SOURCE_PIECE<TAB>target pieces (or <TAB>pieces kept for every batch), got a "
                  "line without a tab");
    }
    const std::string_view key = std::string_view(line).substr(0, tab);
    const std::string_view values = std::string_view(line).substr(tab + 1);
    if (values.find('\t') != std::string_view::npos) throw Error(where + ": more than one tab");
    std::vector<std::int32_t> ids = piece_ids(values, target, "target", where);
    any = true;
    if (key.empty()) {
      always.insert(always.end(), ids.begin(), ids.end());
      continue;
    }
    if (key.find(' ') != std::string_view::npos) {
      throw Error(where + ": the source key \"" + std::string(key) +
                  "\" holds several pieces: a shortlist maps single source pieces");
    }
    const std::int32_t source = vocabulary.piece_id(key);
    if (source < 0) {
      throw Error(where + ": the source piece \"" + std::string(key) +
                  "\" is not in the model's vocabulary (a shortlist built for another vocabulary?)");
    }
    if (static_cast<std::size_t>(source) >= by_source.size()) by_source.resize(static_cast<std::size_t>(source) + 1);
    std::vector<std::int32_t>& list = by_source[static_cast<std::size_t>(source)];
    list.insert(list.end(), ids.begin(), ids.end());
  }
  if (!any) throw Error(path + ": the shortlist holds no lists (expected SOURCE_PIECE<TAB>target pieces lines)");
  return Shortlist(target.target_size(), std::move(always), std::move(by_source));
}

std::vector<std::int32_t> Shortlist::pieces(const std::vector<std::vector<std::int32_t>>& sources,
                                            const std::vector<std::int32_t>& keep) const {
  std::vector<std::uint8_t> in(static_cast<std::size_t>(target_size_), 0);
  const auto mark = [&in](const std::vector<std::int32_t>& ids) {
    for (const std::int32_t id : ids) in[static_cast<std::size_t>(id)] = 1;
  };
  for (const std::int32_t id : keep) {
    if (id < 0 || id >= target_size_) throw Error("shortlist: target piece " + std::to_string(id) + " is out of range");
  }
  mark(keep);
  mark(always_);
  for (const std::vector<std::int32_t>& source : sources) {
    for (const std::int32_t id : source) {
      if (id >= 0 && static_cast<std::size_t>(id) < by_source_.size()) mark(by_source_[static_cast<std::size_t>(id)]);
    }
  }
  std::vector<std::int32_t> out;
  for (std::size_t id = 0; id < in.size(); ++id) {
    if (in[id] != 0) out.push_back(static_cast<std::int32_t>(id));
  }
  return out;
}

std::size_t Shortlist::source_pieces() const {
  return static_cast<std::size_t>(std::count_if(by_source_.begin(), by_source_.end(),
                                                [](const std::vector<std::int32_t>& list) { return !list.empty(); }));
}

}  // namespace dragoman::decode
