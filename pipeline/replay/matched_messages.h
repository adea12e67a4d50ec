// Matched point-to-point messages with both sides' timing, for the analyses that judge a
// transfer by what both ends did (Vetter's classifier, Scalasca's Late Sender and Late
// Receiver). Built from the replay model's matching (kernels/message_match.h: one
// implementation for the replay and these): each sender's owner routes the send side
// of its messages to the receiver's owner, which joins them with the receives. One
// all-to-all; O(messages) work and memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string_view>
#include <vector>

#include "kernels/message_class.h"
#include "pipeline/engine/context.h"

namespace perfsift::pipeline {

struct ReplayModel;

struct MatchedMessage {
  int32_t src = -1, dst = -1;
  // Event indices within their ranks; *_done: the call that completed the request
  // (-1: the call itself was blocking, or nothing completed it).
  int32_t send_event = -1, send_done = -1, recv_event = -1, recv_done = -1;
  int32_t send_region = 0, recv_region = 0;
  uint32_t send_site = 0, recv_site = 0, send_done_site = 0, recv_done_site = 0;
  uint16_t send_op = 0, recv_op = 0, send_done_op = 0, recv_done_op = 0;
  kernels::vetter::TransferTiming timing;
};

struct MessageEnds {
  int32_t src, dst;
};

// The matched messages of the owned receivers, ordered by (receiver, receive event), one
// call's several receives by sender. Each message is assembled from the replay model
// when read: the table holds its receive's index (4 B per message instead of the 136 B
// of a MatchedMessage), and the send halves of the few whose sender another process
// owns (they came here in the join). Copies share the table; reads are thread-safe.
class MatchedMessageTable {
 public:
  class const_iterator;
  MatchedMessageTable() = default;
  size_t size() const { return m_end - m_begin; }
  bool empty() const { return m_begin == m_end; }
  MatchedMessage operator[](size_t i) const;
  const_iterator begin() const;
  const_iterator end() const;
  // The messages received by owned rank `slot` (program order), a table of their own.
  MatchedMessageTable of_receiver(size_t slot) const;

  struct Store;  // matched_messages.cpp

 private:
  friend MatchedMessageTable match_messages(const Context &ctx, std::shared_ptr<const ReplayModel> model);
  MatchedMessageTable(std::shared_ptr<const Store> store, size_t begin, size_t end)
      : m_store(std::move(store)), m_begin(begin), m_end(end) {}
  size_t receiver_of(size_t message) const;  // its receiver's slot
  MatchedMessage assemble(size_t message, size_t slot) const;
  MessageEnds ends_of(size_t message, size_t slot) const;
  std::shared_ptr<const Store> m_store;
  size_t m_begin = 0, m_end = 0;  // messages of the store
};

// Walks the messages in order, assembling each (the receiver's slot kept as it goes).
class MatchedMessageTable::const_iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = MatchedMessage;
  using difference_type = std::ptrdiff_t;
  using reference = MatchedMessage;
  using pointer = void;
  const_iterator() = default;
  MatchedMessage operator*() const { return m_table->assemble(m_message, m_slot); }
  // Its sender and receiver alone, read without assembling the message.
  MessageEnds ends() const { return m_table->ends_of(m_message, m_slot); }
  const_iterator &operator++();
  const_iterator operator++(int) {
    const_iterator was = *this;
    ++*this;
    return was;
  }
  bool operator==(const const_iterator &o) const { return m_message == o.m_message; }

 private:
  friend class MatchedMessageTable;
  const_iterator(const MatchedMessageTable *table, size_t message, size_t slot)
      : m_table(table), m_message(message), m_slot(slot) {}
  const MatchedMessageTable *m_table = nullptr;
  size_t m_message = 0, m_slot = 0;
};

// Collective: the matched messages whose receiver this process owns; the table keeps
// `model` alive.
MatchedMessageTable match_messages(const Context &ctx, std::shared_ptr<const ReplayModel> model);

// Product: the messages of the owned receivers with both sides' timing, joined once at
// the first stage boundary that needs them and shared by the stages after.
struct MatchedMessages {
  static constexpr std::string_view kProduct = "matched messages";
  MatchedMessageTable items;
};

}  // namespace perfsift::pipeline
