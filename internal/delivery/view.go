package delivery

import "time"

// View is what a caller is told of a delivery: the "delivery" member of a
// create_ticket answer and of a get_ticket ticket.
type View struct {
	State State `json:"state"`
	// HelpdeskID and URL name the ticket in the destination once it is
	// delivered.
	HelpdeskID string `json:"helpdesk_id,omitempty"`
	URL        string `json:"url,omitempty"`
	// Message tells the model, in words, what the state means for it.
	Message string `json:"message"`
}

// View returns what a caller is told of r at now.
func (r *Record) View(now time.Time) View {
	v := View{State: r.Reported(now)}
	switch v.State {
	case Queued, InProgress:
		v.Message = "The ticket is recorded and is being sent to the helpdesk. It will not be created twice: do not call again to create it."
	case Delivered:
		v.HelpdeskID, v.URL = r.Receipt.ID, r.Receipt.URL
		v.Message = "The ticket is in the helpdesk."
	case Failed:
		v.Message = "The helpdesk did not accept the ticket and a person has been alerted to it. Do not create another ticket for this request; tell the user it is being looked at."
	case Uncertain:
		v.Message = "It is not known whether the helpdesk received the ticket; a person will check and settle it. Do not create another ticket for this request; tell the user it is being looked at."
	case Abandoned:
		// The operator's reason is not repeated: it is written for the
		// audit and may quote the ticket or say what the user should not
		// read.
		v.Message = "A person from support closed this request; nothing more will be sent to the helpdesk. Do not create another ticket for this request; tell the user that support closed it."
	}
	return v
}
