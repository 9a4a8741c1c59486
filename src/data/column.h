// A column of the encoded corpus (token ids, offsets, line numbers): its own vector while a corpus
// is built in memory, or a view of a memory-mapped cache file (data/corpus_cache.h), whose pages
// the page cache shares between every process that maps it.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <vector>

namespace dragoman::data {

template <typename T>
class Column {
 public:
  Column() = default;
  Column(std::initializer_list<T> values) : owned_(values) {}
  // A view of n values at `data`, kept valid by `keep` (the mapping).
  Column(std::shared_ptr<const void> keep, const T* data, std::size_t n)
      : keep_(std::move(keep)), view_(data), view_size_(n) {}

  // Appends to an owned column (a mapped one is read-only).
  void push_back(T value) {
    if (keep_) throw std::logic_error("Column: a mapped column is read-only");
    owned_.push_back(value);
  }
  template <typename It>
  void append(It first, It last) {
    if (keep_) throw std::logic_error("Column: a mapped column is read-only");
    owned_.insert(owned_.end(), first, last);
  }

  const T* data() const { return keep_ ? view_ : owned_.data(); }
  std::size_t size() const { return keep_ ? view_size_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  bool mapped() const { return keep_ != nullptr; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }

  bool operator==(const Column& other) const { return equal(other.data(), other.size()); }
  bool operator==(const std::vector<T>& other) const { return equal(other.data(), other.size()); }

 private:
  bool equal(const T* other, std::size_t n) const {
    if (n != size()) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!(data()[i] == other[i])) return false;
    }
    return true;
  }

  std::vector<T> owned_;
  std::shared_ptr<const void> keep_;
  const T* view_ = nullptr;
  std::size_t view_size_ = 0;
};

}  // namespace dragoman::data
