// The decoder state's rows (see transformer.h): beam search's reorders and dropped sentences
// (select_rows) and sentences joining a running search (append_decoding). On the CPU both work in
// place where the caches have room: rows that stay are not copied, and the caches keep their memory.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/decoder_rows.h"
#include "model/transformer.h"
#include "ops/gather.h"

namespace dragoman::model {

// See decoder_rows.h.
Tensor select_batch_rows(const Tensor& x, RowIndex& selection, std::int64_t length, std::int64_t allocated_rows) {
  const std::vector<std::int64_t>& rows = selection.rows;
  Shape shape = x.shape();
  shape[0] = allocated_rows;
  Tensor out = Tensor::empty(shape, x.dtype(), x.device()).narrow(0, 0, static_cast<std::int64_t>(rows.size()));
  for (const std::int64_t row : rows) {
    if (row < 0 || row >= x.dim(0)) throw Error("select_rows: row " + std::to_string(row) + " out of range");
  }
  // Rows whose kept prefix is one dense block (the caches always are): one gather, on a GPU one
  // kernel for all rows. Anything else: a copy per row.
  bool dense = x.strides().back() == 1 || x.rank() == 1;
  for (std::int64_t d = x.rank() - 2; d >= 1 && dense; --d) dense = x.strides()[d] == x.strides()[d + 1] * x.dim(d + 1);
  if (dense && rows.size() <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    const auto element = static_cast<std::int64_t>(dtype_size(x.dtype()));
    const std::int64_t row_bytes =
        (x.rank() > 1 ? std::min(length, x.dim(1)) * x.strides()[1] : std::int64_t{1}) * element;
    ops::gather_row_prefixes(x, x.strides()[0] * element, out, out.strides()[0] * element, selection.index, row_bytes,
                             x.device().is_cpu() ? Tensor() : selection.on(x.device()));
    return out;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Tensor to = out.narrow(0, static_cast<std::int64_t>(i), 1), from = x.narrow(0, rows[i], 1);
    if (x.rank() > 1 && length < x.dim(1)) {
      if (length == 0) continue;
      to = to.narrow(1, 0, length);
      from = from.narrow(1, 0, length);
    }
    to.copy_from(from);
  }
  return out;
}

namespace {

// Whether `rows` keeps each of the state's `count` rows in place (always so in greedy search, and
// in beam search whenever every beam extends itself): select_rows then has nothing to move.
bool keeps_every_row(const std::vector<std::int64_t>& rows, std::int64_t count) {
  if (static_cast<std::int64_t>(rows.size()) != count) return false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] != static_cast<std::int64_t>(i)) return false;
  }
  return true;
}

// Rows `rows` of x (CPU) [B, L, D], output row i with its first positions[i] entries of dimension 1
// (the rest unset: never read), as select_batch_rows: the decoder's caches when their rows hold
// different numbers of positions (sources of different lengths, fed different numbers of tokens),
// copied without the longest row's padding.
Tensor select_own_prefixes(const Tensor& x, const std::vector<std::int64_t>& rows,
                           const std::vector<std::int64_t>& positions, std::int64_t allocated_rows) {
  Shape shape = x.shape();
  shape[0] = allocated_rows;
  const auto count = static_cast<std::int64_t>(rows.size());
  Tensor out = Tensor::empty(shape, x.dtype(), x.device()).narrow(0, 0, count);
  if (x.strides()[2] != 1 || x.strides()[1] != x.dim(2)) throw Error("select_rows: the state's rows must be dense");
  const auto element = static_cast<std::int64_t>(dtype_size(x.dtype()));
  const std::vector<std::int32_t> index(rows.begin(), rows.end());
  std::vector<std::int64_t> bytes(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= x.dim(0))
      throw Error("select_rows: row " + std::to_string(rows[i]) + " out of range");
    bytes[i] = std::min(positions[i], x.dim(1)) * x.strides()[1] * element;
  }
  ops::gather_row_prefixes(x, x.strides()[0] * element, out, out.strides()[0] * element, index, bytes);
  return out;
}

// Whether t is a CPU [rows, positions, width] tensor whose (row, position) vectors are dense: the
// layout the in-place moves and joins copy prefixes of.
bool dense_cpu_rows(const Tensor& t) {
  return t.device().is_cpu() && t.rank() == 3 && t.strides()[2] == 1 && t.strides()[1] == t.dim(2);
}

// Row r of `from` (dense_cpu_rows) with its first used[r] positions copied to row r of `to`, a
// view of as many rows: the rest of each row is left as it is.
void copy_own_prefixes(const Tensor& from, Tensor to, const std::vector<std::int64_t>& used) {
  const auto element = static_cast<std::int64_t>(dtype_size(from.dtype()));
  std::vector<std::int32_t> index(static_cast<std::size_t>(from.dim(0)));
  std::vector<std::int64_t> bytes(index.size());
  for (std::size_t r = 0; r < index.size(); ++r) {
    index[r] = static_cast<std::int32_t>(r);
    bytes[r] = std::min(used[r], from.dim(1)) * from.strides()[1] * element;
  }
  ops::gather_row_prefixes(from, from.strides()[0] * element, to, to.strides()[0] * element, index, bytes);
}

// Whether `tensors` (a decoder state's caches) can take a reordering into `rows` rows in place:
// dense rows on the CPU, and storage for that many.
bool fits_in_place(const std::vector<Tensor>& tensors, std::int64_t rows) {
  return std::all_of(tensors.begin(), tensors.end(),
                     [&](const Tensor& t) { return dense_cpu_rows(t) && t.capacity(0) >= rows; });
}

// Rows `rows` of each tensor, in place (ops::move_rows_in_place: rows that stay are not copied, and
// the tensors keep their memory, so the caches stay in the processor's caches step after step);
// new row i keeps its first units[i] positions (the rest unset: never read). Every tensor ends
// with rows.size() rows (a view of its storage's first rows).
void select_rows_in_place(const std::vector<std::vector<Tensor>*>& groups, const std::vector<std::int64_t>& rows,
                          const std::vector<std::int64_t>& units) {
  const std::vector<std::int32_t> index(rows.begin(), rows.end());
  const auto count = static_cast<std::int64_t>(rows.size());
  std::vector<ops::RowBlock> blocks;
  for (std::vector<Tensor>* tensors : groups) {
    for (Tensor& t : *tensors) {
      const auto element = static_cast<std::int64_t>(dtype_size(t.dtype()));
      blocks.push_back({t.raw_data(), t.strides()[0] * element, t.strides()[1] * element});
    }
  }
  ops::move_rows_in_place(index, units, blocks);
  for (std::vector<Tensor>* tensors : groups) {
    for (Tensor& t : *tensors) t = t.widen(0, count);
  }
}

}  // namespace

void Transformer::select_rows(DecoderState& state, const std::vector<std::int64_t>& rows, bool same_sources) const {
  const auto n = static_cast<std::int64_t>(rows.size());
  const std::int64_t beams = state.beams, rows_before = state.batch_size();
  state.allocated_rows = std::max(state.allocated_rows, n);
  if (same_sources) {
    if (n != state.batch_size()) throw Error("select_rows: same_sources needs one row per state row");
  } else {
    // The source of each run of `beams` new rows.
    if (n % beams != 0) {
      throw Error("select_rows: " + std::to_string(n) + " rows are not runs of " + std::to_string(beams) + " beams");
    }
    std::vector<std::int64_t> sources;
    for (std::int64_t j = 0; j < n; j += beams) {
      for (std::int64_t k = 0; k < beams; ++k) {
        if (rows[j + k] < 0 || rows[j + k] >= state.batch_size()) {
          throw Error("select_rows: row " + std::to_string(rows[j + k]) + " out of range");
        }
        if (rows[j + k] / beams != rows[j] / beams) {
          throw Error("select_rows: rows " + std::to_string(rows[j]) + " and " + std::to_string(rows[j + k]) +
                      " of one run of beams decode different sources");
        }
      }
      sources.push_back(rows[j] / beams);
    }
    if (!keeps_every_row(sources, rows_before / beams)) {
      const std::int64_t allocated_sources = state.allocated_rows / beams;
      RowIndex selection(sources);
      // On the CPU each source's keys and values without its padding (attention reads a source's
      // own length only); elsewhere all of it.
      std::vector<std::int64_t> lengths;
      if (state.src_lengths.device().is_cpu()) {
        const std::int32_t* before = state.src_lengths.data<std::int32_t>();
        for (const std::int64_t source : sources) lengths.push_back(before[source]);
      }
      state.src_lengths = select_batch_rows(state.src_lengths, selection, 1, allocated_sources);
      const auto count = static_cast<std::int64_t>(sources.size());
      if (!lengths.empty() && fits_in_place(state.cross_k, count) && fits_in_place(state.cross_v, count)) {
        select_rows_in_place({&state.cross_k, &state.cross_v}, sources, lengths);
      } else {
        for (auto* tensors : {&state.cross_k, &state.cross_v}) {
          for (Tensor& t : *tensors) {
            t = lengths.empty() ? select_batch_rows(t, selection, t.dim(1), allocated_sources)
                                : select_own_prefixes(t, sources, lengths, allocated_sources);
          }
        }
      }
      std::vector<std::int64_t> fed;
      for (const std::int64_t source : sources) fed.push_back(state.fed[static_cast<std::size_t>(source)]);
      state.fed = std::move(fed);
      state.steps = state.fed.empty() ? 0 : *std::max_element(state.fed.begin(), state.fed.end());
    }
  }
  if (keeps_every_row(rows, rows_before)) return;
  // Only the positions fed so far hold keys and values: on the CPU each row's own (sources fed
  // different numbers of tokens: a search that sentences joined), elsewhere the most any row has.
  const bool own_prefixes =
      state.self_k.front().device().is_cpu() &&
      std::any_of(state.fed.begin(), state.fed.end(), [&](std::int64_t f) { return f != state.steps; });
  std::vector<std::int64_t> row_fed;  // of each new row
  if (own_prefixes) {
    for (std::int64_t i = 0; i < n; ++i) row_fed.push_back(state.fed[static_cast<std::size_t>(i / beams)]);
  }
  if (fits_in_place(state.self_k, n) && fits_in_place(state.self_v, n)) {
    for (const std::int64_t row : rows) {
      if (row < 0 || row >= rows_before) throw Error("select_rows: row " + std::to_string(row) + " out of range");
    }
    if (!own_prefixes) row_fed.assign(static_cast<std::size_t>(n), state.steps);
    select_rows_in_place({&state.self_k, &state.self_v}, rows, row_fed);
    return;
  }
  RowIndex selection(rows);
  for (auto* tensors : {&state.self_k, &state.self_v}) {
    for (Tensor& t : *tensors) {
      t = own_prefixes ? select_own_prefixes(t, rows, row_fed, state.allocated_rows)
                       : select_batch_rows(t, selection, state.steps, state.allocated_rows);
    }
  }
}

namespace {

// The source positions append_decoding's cross-attention caches round up to (room for the next
// joining sentences' longer sources).
constexpr std::int64_t kJoinPositions = 32;

// Whether `tensors` [count, positions, width] can be widened to `rows` rows and `positions`
// positions within their storage, and take `more`'s rows (CPU, dense rows of one width).
bool appendable(const std::vector<Tensor>& tensors, const std::vector<Tensor>& more, std::int64_t rows,
                std::int64_t positions) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!dense_cpu_rows(t) || !dense_cpu_rows(more[i]) || t.capacity(0) < rows || t.capacity(1) < positions ||
        more[i].dim(2) != t.dim(2)) {
      return false;
    }
  }
  return true;
}

// `tensors` widened to `rows` rows and at least `positions` positions, with `more`'s rows written
// after the first dim(0) (row j of `more` with its first used[j] positions).
void append_rows(std::vector<Tensor>& tensors, const std::vector<Tensor>& more, std::int64_t rows,
                 std::int64_t positions, const std::vector<std::int64_t>& used) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::int64_t first = tensors[i].dim(0);
    Tensor t = tensors[i].widen(0, rows);
    t = t.widen(1, std::max(t.dim(1), positions));
    copy_own_prefixes(more[i], t.narrow(0, first, more[i].dim(0)), used);
    tensors[i] = t;
  }
}

// append_decoding on the CPU without moving the sentences already there: `more`'s sources and rows
// go to the caches' spare rows (the room append_decoding and select_rows leave). False, and the
// caches unchanged, where they do not fit (`state.src_lengths` is already stacked).
bool append_in_place(DecoderState& state, const DecoderState& more, const std::vector<std::int64_t>& sources_b,
                     const std::vector<std::int64_t>& rows_b) {
  const std::int64_t n = state.src_lengths.dim(0), rows = n * state.beams;
  const std::int64_t positions = more.cross_k.front().dim(1);
  std::int64_t fed = 0;
  for (const std::int64_t f : more.fed) fed = std::max(fed, f);
  if (fed > state.self_k.front().dim(1) || !appendable(state.cross_k, more.cross_k, n, positions) ||
      !appendable(state.cross_v, more.cross_v, n, positions) || !appendable(state.self_k, more.self_k, rows, 0) ||
      !appendable(state.self_v, more.self_v, rows, 0)) {
    return false;
  }
  append_rows(state.cross_k, more.cross_k, n, positions, sources_b);
  append_rows(state.cross_v, more.cross_v, n, positions, sources_b);
  append_rows(state.self_k, more.self_k, rows, 0, rows_b);
  append_rows(state.self_v, more.self_v, rows, 0, rows_b);
  return true;
}

}  // namespace

void Transformer::append_decoding(DecoderState& state, DecoderState more) const {
  if (state.batch_size() == 0) {
    state = std::move(more);
    return;
  }
  if (more.batch_size() == 0) return;
  if (more.beams != state.beams || more.attention_layer != state.attention_layer ||
      more.attention_head != state.attention_head || more.cross_k.size() != state.cross_k.size()) {
    throw Error("append_decoding: the states differ in beams, layers or recorded attention");
  }
  const std::int64_t n1 = state.src_lengths.dim(0), n2 = more.src_lengths.dim(0), n = n1 + n2;
  const std::int64_t r1 = state.batch_size(), r2 = more.batch_size(), rows = r1 + r2;
  const Device device = state.src_lengths.device();
  // [n1 + n2, ...] from the two states' first dimension's entries; along dimension 1 the longer
  // of the two (the sources padded to the longest; the caches' positions allocated). Each part's
  // rows bring their own positions (`used`: one count per row): on the CPU only those are copied
  // (attention reads no others), elsewhere each part's longest, and with `pad` the positions beyond
  // are zeros (source padding, which attention masks; cache positions not fed yet stay unset).
  const bool cpu = device.is_cpu();
  const auto stack = [&](const Tensor& a, const Tensor& b, const std::vector<std::int64_t>& used_a,
                         const std::vector<std::int64_t>& used_b, bool pad) {
    Shape shape = a.shape();
    shape[0] = a.dim(0) + b.dim(0);
    if (a.rank() > 1) shape[1] = std::max(a.dim(1), b.dim(1));
    Tensor out;
    if (cpu && a.rank() > 1) {
      // Room to spare for the sentences that join next (append_in_place): half as many rows
      // again, and the positions of a source up to a multiple of kJoinPositions.
      Shape room = shape;
      room[0] += shape[0] / 2;
      if (pad) room[1] = (shape[1] + kJoinPositions - 1) / kJoinPositions * kJoinPositions;
      out = Tensor::empty(room, a.dtype(), device).narrow(0, 0, shape[0]).narrow(1, 0, shape[1]);
    } else {
      out = Tensor::empty(shape, a.dtype(), device);
    }
    const auto put = [&](const Tensor& from, std::int64_t first, const std::vector<std::int64_t>& used) {
      Tensor to = out.narrow(0, first, from.dim(0));
      if (from.rank() == 1) return to.copy_from(from);
      if (cpu) return copy_own_prefixes(from, to, used);
      const std::int64_t longest = used.empty() ? 0 : *std::max_element(used.begin(), used.end());
      if (longest > 0) to.narrow(1, 0, longest).copy_from(from.narrow(1, 0, longest));
      if (pad && longest < shape[1]) to.narrow(1, longest, shape[1] - longest).fill_zero();
    };
    put(a, 0, used_a);
    put(b, a.dim(0), used_b);
    return out;
  };
  // Each part's positions per source (the sources' lengths, on the CPU; else the padded length)
  // and per row (the tokens fed).
  const auto source_positions = [&](const DecoderState& s) {
    const std::int64_t count = s.src_lengths.dim(0);
    std::vector<std::int64_t> positions(static_cast<std::size_t>(count), s.cross_k.front().dim(1));
    if (cpu) {
      const std::int32_t* lengths = s.src_lengths.data<std::int32_t>();
      for (std::int64_t j = 0; j < count; ++j) positions[static_cast<std::size_t>(j)] = lengths[j];
    }
    return positions;
  };
  const auto row_positions = [](const DecoderState& s) {
    std::vector<std::int64_t> positions;
    for (std::int64_t r = 0; r < s.batch_size(); ++r) positions.push_back(s.fed[static_cast<std::size_t>(r / s.beams)]);
    return positions;
  };
  const std::vector<std::int64_t> sources_a = source_positions(state), sources_b = source_positions(more);
  const std::vector<std::int64_t> rows_a = row_positions(state), rows_b = row_positions(more);
  state.src_lengths = stack(state.src_lengths, more.src_lengths, {}, {}, false);
  if (cpu && append_in_place(state, more, sources_b, rows_b)) {
    state.fed.insert(state.fed.end(), more.fed.begin(), more.fed.end());
    state.steps = std::max(state.steps, more.steps);
    state.capacity = std::max(state.capacity, more.capacity);
    state.allocated_rows = std::max(state.allocated_rows, rows);
    state.attention = Tensor();
    return;
  }
  for (std::size_t i = 0; i < state.cross_k.size(); ++i) {
    state.cross_k[i] = stack(state.cross_k[i], more.cross_k[i], sources_a, sources_b, true);
    state.cross_v[i] = stack(state.cross_v[i], more.cross_v[i], sources_a, sources_b, true);
    state.self_k[i] = stack(state.self_k[i], more.self_k[i], rows_a, rows_b, false);
    state.self_v[i] = stack(state.self_v[i], more.self_v[i], rows_a, rows_b, false);
  }
  state.fed.insert(state.fed.end(), more.fed.begin(), more.fed.end());
  state.steps = std::max(state.steps, more.steps);
  state.capacity = std::max(state.capacity, more.capacity);
  state.allocated_rows = rows;
  state.attention = Tensor();
  if (state.src_lengths.dim(0) != n || state.self_k.front().dim(0) != rows) {
    throw Error("append_decoding: inconsistent state sizes");
  }
}

}  // namespace dragoman::model
